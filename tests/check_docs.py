#!/usr/bin/env python3
"""check_docs.py - keeps docs/ARCHITECTURE.md true to the code.

usage: check_docs.py SOURCE_DIR BUILD_DIR            check (exit 1 on drift)
       check_docs.py SOURCE_DIR BUILD_DIR --picture  print the module picture

1. The module picture: who calls whom, read from the built objects with
   `nm` (a call is an undefined symbol of one object that another object
   of the same library defines), each module on the floor above the
   highest module it calls. The picture between the markers in
   ARCHITECTURE.md must be exactly the one the objects give, no module
   may call one that calls it back (directly or through others), and no
   module of src/ may call one of a folder that comes after its own in
   src/meson.build's `layers` (the folders are the layers, bottom up).
2. Every file path and every function the page cites exists: a path in
   backquotes (`src/api/file.c`, `docs/FORMAT.md`), a `name()` in backquotes,
   and a `file.c:name` pair (the function defined in that file).
"""
import os
import re
import subprocess
import sys

BEGIN = "<!-- modules: begin (tests/check_docs.py --picture) -->"
END = "<!-- modules: end -->"
# Everything calls these: left out of the picture, named under it.
GROUND = {"base/error", "base/alloc"}


def objects(build):
    """{module: object path}: the MPI core when built (it has every
    module), else the serial one; and the shim's objects."""
    objs = {}
    for core in ("libraster_core_mpi.a.p", "libraster_core.a.p"):
        d = os.path.join(build, "src", core)
        if os.path.isdir(d):
            for o in sorted(os.listdir(d)):
                # meson names src/base/error.c's object base_error.c.o
                if o.endswith(".c.o"):
                    objs[o[:-4].replace("_", "/", 1)] = os.path.join(d, o)
            break
    d = os.path.join(build, "preload", "libraster_shim.so.p")
    for o in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if o.endswith(".c.o"):
            objs["preload/" + o[:-4]] = os.path.join(d, o)
    return objs


def nm(path, *flags):
    out = subprocess.run(["nm", *flags, path], capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def calls(build):
    objs = objects(build)
    owner = {}
    for mod, path in objs.items():
        for line in nm(path, "--defined-only", "-g"):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRV":
                owner.setdefault(parts[2], mod)
    graph = {m: set() for m in objs}
    for mod, path in objs.items():
        for line in nm(path, "-u"):
            name = line.split()[-1]
            callee = owner.get(name)
            # a netCDF function is netCDF's, though the shim defines the
            # same names: libraster links no shim, and the shim's own
            # calls go to the real netCDF (route.c)
            if callee and callee != mod and not name.startswith("nc_"):
                graph[mod].add(callee)
    return graph


def layers(src):
    """The folders of src/, bottom up, as src/meson.build lists them."""
    text = open(os.path.join(src, "src", "meson.build")).read()
    m = re.search(r"^layers = \[([^]]*)\]", text, re.M)
    return re.findall(r"'(\w+)'", m.group(1)) if m else []


def upward(graph, order):
    """Calls from a folder of src/ into one that comes after it."""
    rank = {name: i for i, name in enumerate(order)}
    bad = []
    for m, callees in sorted(graph.items()):
        folder = m.split("/")[0]
        if folder not in rank:
            continue
        for c in sorted(callees):
            if rank.get(c.split("/")[0], -1) > rank[folder]:
                bad.append(f"{m} calls {c}, in a folder above its own")
    return bad


def cycles(graph):
    """Modules that reach themselves again."""
    bad = []
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m == start:
                bad.append(start)
                break
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
    return bad


def picture(graph):
    floor = {}

    def level(m, path=()):
        if m in floor:
            return floor[m]
        if m in path:  # a cycle: reported by cycles()
            return 0
        below = [level(c, path + (m,)) for c in graph[m] if c not in GROUND]
        floor[m] = 1 + max(below, default=0)
        return floor[m]

    for m in graph:
        level(m)
    width = max(len(m) for m in graph)
    lines = []
    for m in sorted(graph, key=lambda m: (-floor[m], m)):
        if m in GROUND:
            continue
        callees = " ".join(sorted(c for c in graph[m] if c not in GROUND))
        arrow = "-> " + callees if callees else ""
        lines.append(f"{floor[m]:2d}  {m:<{width}}  {arrow}".rstrip())
    lines.append(f"{'':2}  {'(all)':<{width}}  -> " + " ".join(sorted(GROUND)))
    return "\n".join(lines)


def cited_problems(src, doc):
    text = open(doc).read()
    problems = []
    code_files = []
    for top in ("src", "preload", "tools", "include", "tests", "examples"):
        for root, _, files in os.walk(os.path.join(src, top)):
            code_files += [os.path.join(root, f) for f in files
                           if f.endswith((".c", ".h", ".inc"))]
    bodies = {f: open(f, errors="replace").read() for f in code_files}
    basenames = set()
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        basenames.update(files)
    netcdf_h = ""
    for inc in ("/usr/include/netcdf.h",):
        if os.path.exists(inc):
            netcdf_h = open(inc).read()

    def defined(name, in_file=None):
        # a definition: at the start of a line, not a declaration
        pat = re.compile(r"^[A-Za-z_][\w \t\*]*\b" + re.escape(name) +
                         r"\((?:[^;\n]*$|.*\{)", re.M)
        for f, body in bodies.items():
            if in_file and os.path.basename(f) != in_file:
                continue
            if pat.search(body):
                return True
        return False

    for tok in re.findall(r"`([^`\n]+)`", text):
        for path in re.findall(r"(?:^|\s)((?:src|preload|tools|tests|docs|"
                               r"include|examples|datasets)/[\w./-]+)", tok):
            if not os.path.exists(os.path.join(src, path.rstrip(".,"))):
                problems.append(f"path {path} does not exist")
        for name in re.findall(r"(?:^|[\s,(])([\w-]+\.(?:c|h|inc|md|sh|py))\b",
                               tok):
            if name not in basenames:
                problems.append(f"file {name} exists nowhere")
        m = re.fullmatch(r"([\w]+\.[ch]):(\w+)", tok)
        if m and not defined(m.group(2), m.group(1)):
            problems.append(f"{tok}: no {m.group(2)} defined in {m.group(1)}")
        for name in re.findall(r"\b(\w+)\(\)", tok):
            if name.startswith("nc_"):  # netCDF's own API
                if not re.search(r"\b" + name + r"\(", netcdf_h):
                    problems.append(f"{name}() is not in netcdf.h")
            elif not defined(name):
                problems.append(f"{name}() is defined nowhere")
    return problems


def main():
    src, build = sys.argv[1], sys.argv[2]
    graph = calls(build)
    if not graph:
        print("check_docs: no objects under", build)
        return 1
    pic = picture(graph)
    if sys.argv[3:] == ["--picture"]:
        print(pic)
        return 0
    doc = os.path.join(src, "docs", "ARCHITECTURE.md")
    fails = []
    for m in cycles(graph):
        fails.append(f"module {m} calls a module that calls it back")
    order = layers(src)
    if not order:
        fails.append("src/meson.build lists no layers")
    fails += upward(graph, order)
    text = open(doc).read()
    if BEGIN not in text or END not in text:
        fails.append("ARCHITECTURE.md has no module picture markers")
    else:
        shown = text.split(BEGIN)[1].split(END)[0].strip().strip("`").strip()
        if shown != pic:
            fails.append("ARCHITECTURE.md's module picture differs from the "
                         "code's; the code's is:\n" + pic)
    fails += cited_problems(src, doc)
    for f in fails:
        print("FAIL:", f)
    print(f"check_docs: {len(graph)} modules, {len(fails)} problems")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
