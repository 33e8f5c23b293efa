# bash completion for mentormate-ca(8), the campus certifying authority.
# Installed by `make install` (and the Debian package) as
# share/bash-completion/completions/mentormate-ca, where bash-completion finds it by the
# command's name. Every subcommand and option of `mentormate-ca --help` is here; a test
# (MentorCATests) checks that.

_mentormate_ca() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi

    local commands="init key serve issue release list"

    case "$prev" in
        --dir)
            COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
        --domain|--smtp|--from|--listen|--validity-days|--account)
            return ;;
    esac

    local cmd="" i
    for ((i = 1; i < cword; i++)); do
        case "${words[i]}" in
            -*) continue ;;
            *) cmd="${words[i]}"; break ;;
        esac
    done

    local opts=""
    case "$cmd" in
        "") COMPREPLY=($(compgen -W "$commands --version --help -h" -- "$cur")); return ;;
        init) opts="--dir --domain --smtp --from --listen --validity-days" ;;
        key|list) opts="--dir" ;;
        serve) opts="--dir --listen" ;;
        issue) opts="--dir --account --domain" ;;
        release) opts="--dir" ;;
    esac
    COMPREPLY=($(compgen -W "$opts --help -h" -- "$cur"))
}

complete -F _mentormate_ca mentormate-ca
