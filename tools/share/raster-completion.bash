# bash completion for raster's tools (rasterconvert, rasterget, rasterstat,
# rastergen, rasterbench). Options come from the tool's own --help, so they
# stay in step with it; values are completed where the set is fixed, files
# elsewhere. Installed once per tool name under
# share/bash-completion/completions/.

_raster_tool()
{
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    case $prev in
        --layout) COMPREPLY=($(compgen -W "packed bbox full" -- "$cur")); return ;;
        --kind) COMPREPLY=($(compgen -W "cesm wrf" -- "$cur")); return ;;
        --size) COMPREPLY=($(compgen -W "tiny small medium paper" -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W "2 3 4 5" -- "$cur")); return ;;
        --quantize) COMPREPLY=($(compgen -W "bitgroom, granularbr, bitround," -- "$cur")); return ;;
        --var|--vars|--region|--case|--chunk|--start|--count|--buffer|--reps|--deflate|--overhead|--thin|--ntime|--ndepth|--bw)
            return ;;  # free text
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("${COMP_WORDS[0]}" --help 2>/dev/null |
               grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    # a file (FILE, OUT.nc, --mask FILE:VAR, --names FILE, --json FILE)
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
}
complete -F _raster_tool rasterconvert rasterget rasterstat rastergen rasterbench
