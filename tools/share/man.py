#!/usr/bin/env python3
"""man.py TOOL DESCRIPTION OUT - writes the man page of raster's tool TOOL
(an executable) to OUT, from its own --help and --version, so that the page
says what the program says. DESCRIPTION is the NAME line's summary."""
import os
import subprocess
import sys

TOOLS = ["rasterconvert", "rasterget", "rasterstat", "rastergen",
         "rasterbench"]


def run(exe, arg):
    return subprocess.run([exe, arg], check=True, capture_output=True,
                          text=True).stdout


def roff(line):
    """One line of text as roff: backslashes, hyphens, control words."""
    line = line.replace("\\", "\\e").replace("-", "\\-")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def main():
    exe, description, out = sys.argv[1:4]
    name = os.path.basename(exe)
    text = run(exe, "--help").rstrip("\n").split("\n")
    version = run(exe, "--version").split()[-1]
    # the usage lines: "usage: ..." and the lines that continue it
    synopsis = []
    while text and (text[0].startswith("usage:") or
                    (synopsis and text[0].startswith(" ")) or
                    (synopsis and text[0].lstrip().startswith(name))):
        synopsis.append(text.pop(0).replace("usage: ", "", 1).rstrip())
    while text and not text[0].strip():
        text.pop(0)
    page = [
        '.TH %s 1 "" "raster %s" "raster manual"' % (name.upper(), version),
        ".SH NAME",
        "%s \\- %s" % (name, roff(description)),
        ".SH SYNOPSIS",
        ".nf",
        *[roff(s.strip() if i == 0 else s) for i, s in enumerate(synopsis)],
        ".fi",
        ".SH DESCRIPTION",
        ".nf",
        *[roff(s) for s in text],
        ".fi",
        ".SH SEE ALSO",
        ", ".join("\\fB%s\\fR(1)" % t for t in TOOLS if t != name),
    ]
    with open(out, "w") as f:
        f.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
