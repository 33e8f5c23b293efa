# bash completion for mentormate(1) and mentormated(8).
# Installed by `make install` to share/bash-completion/completions/ (as mentormate and
# mentormated). Every command and option of `mentormate --help` is here; a test checks that.

_mentormate() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi

    local global="--socket --json --help -h --version"
    local commands="signup login logout whoami account device profile feed swipe like pass undo matches unmatch people block unblock blocked follow unfollow followers following chat post comment posts explore identify quiz leaderboard games game meetup meetups member settings notify peers status doctor help"

    case "$prev" in
        --socket|--photo|--import|--save-photos)
            COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
        --role)
            COMPREPLY=($(compgen -W "student tutor" -- "$cur")); return ;;
        --expires)
            COMPREPLY=($(compgen -W "30m 1h 8h 1d 7d" -- "$cur")); return ;;
        --luster)
            COMPREPLY=($(compgen -W "metallic non-metallic submetallic vitreous pearly silky greasy resinous adamantine dull earthy" -- "$cur")); return ;;
        --cleavage)
            COMPREPLY=($(compgen -W "none poor good perfect" -- "$cur")); return ;;
        --color|--streak)
            local colours="black blue brass-yellow brown brownish-black colourless copper-red dark-green dark-grey gold-yellow green greenish-black grey lead-grey orange pale-brown pink purple red red-brown silver-white steel-grey white yellow yellow-brown"
            [[ "$prev" == --color ]] && colours="light dark $colours"
            COMPREPLY=($(compgen -W "$colours" -- "$cur")); return ;;
        --hardness)
            COMPREPLY=($(compgen -W "1 2 3 4 5 6 7 8 9 10" -- "$cur")); return ;;
        --email|--name|--bio|--courses|--wage|--budget|--availability|--course|--limit|--label|--contact|--caption|--tag|--author|--search|--players|--time)
            return ;;
    esac

    # The command: the first one or two words that are not options (or option values).
    local cmd="" sub="" sub2="" i w
    for ((i = 1; i < cword; i++)); do
        w="${words[i]}"
        case "$w" in
            --socket) ((i++)); continue ;;
            -*) continue ;;
        esac
        if [[ -z "$cmd" ]]; then cmd="$w"
        elif [[ ( "$cmd" == profile || "$cmd" == device || "$cmd" == account || "$cmd" == settings || "$cmd" == post || "$cmd" == comment || "$cmd" == game || "$cmd" == member ) && -z "$sub" ]]; then
            sub="$w"; [[ "$cmd $sub" == "profile photo" ]] || break
        elif [[ "$cmd $sub" == "profile photo" && -z "$sub2" ]]; then sub2="$w"; break
        else break
        fi
    done

    local opts=""
    case "$cmd" in
        "") COMPREPLY=($(compgen -W "$commands $global" -- "$cur")); return ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
        profile)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "show set photo" -- "$cur")); return; fi
            case "$sub" in
                set) opts="--name --bio --courses --wage --budget --availability --photo --no-photo --available --gender --languages --area --birthdate --prefer-gender --prefer-overlap --prefer-max-wage --prefer-min-budget --no-preferences --contact" ;;
                show) opts="--save-photos --open" ;;
                photo)
                    if [[ -z "$sub2" ]]; then COMPREPLY=($(compgen -W "add remove order" -- "$cur")); return; fi
                    if [[ "$sub2" == add && "$cur" != -* ]]; then
                        COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return
                    fi ;;
            esac ;;
        device)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "list link approve revoke" -- "$cur")); return; fi
            case "$sub" in
                link) opts="--label --expires --passphrase" ;;
                approve) opts="--yes" ;;
                list|revoke) opts="" ;;
            esac ;;
        account)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "export" -- "$cur")); return; fi
            if [[ "$sub" == export && "$cur" != -* ]]; then
                COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return
            fi ;;
        settings)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "show set" -- "$cur")); return; fi
            if [[ "$sub" == set ]]; then
                opts="--unset"
                # The words after `settings set`: none yet → a KEY (the daemon's list), one → a VALUE.
                local after=0
                for ((i = i + 1; i < cword; i++)); do [[ "${words[i]}" == -* ]] || ((after++)); done
                if [[ "$cur" != -* && $after -eq 0 ]]; then
                    local keys
                    keys=$(mentormate settings show --json 2>/dev/null | sed -n 's/^ *"key" : "\([^"]*\)",\{0,1\}$/\1/p')
                    COMPREPLY=($(compgen -W "${keys:-notify.match notify.message notify.unmatch}" -- "$cur")); return
                elif [[ "$cur" != -* && $after -eq 1 ]]; then
                    COMPREPLY=($(compgen -W "true false on off yes no" -- "$cur")); return
                fi
            fi ;;
        meetup)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "create edit cancel show join leave comment" -- "$cur")); return; fi
            case "$sub" in
                create) opts="--title --game --course --at --duration --place --seats --age --adults-only --about" ;;
                edit) opts="--title --game --course --at --duration --place --seats --age --adults-only --no-age-limit --about" ;;
            esac ;;
        member)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "show request verify set" -- "$cur")); return; fi
            case "$sub" in
                request|verify) opts="--ca" ;;
            esac ;;
        post)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "create show edit delete like unlike hide" -- "$cur")); return; fi
            case "$sub" in
                create) opts="--photo --caption --tag" ;;
                show) opts="--save-photos" ;;
                edit) opts="--caption --tag" ;;
            esac ;;
        comment)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "delete hide" -- "$cur")); return; fi ;;
        posts) opts="--tag --author --following --search --limit" ;;
        explore) opts="--limit" ;;
        notify) opts="--stdout" ;;
        signup) opts="--email --name --role --passphrase --import --label --birthdate" ;;
        logout) opts="--forget" ;;
        feed) opts="--course --limit --available --max-wage --min-budget --nearby --gender --min-age --max-age --min-score --no-defaults" ;;
        swipe) opts="--course" ;;
        chat) opts="--follow" ;;
        login|whoami|like|pass|undo|matches|unmatch|block|unblock|blocked|follow|unfollow|followers|following|peers|status|doctor) opts="" ;;
        identify) opts="--color --luster --cleavage --hardness --streak --post" ;;
        quiz) opts="--answers" ;;
        leaderboard) opts="--day --all-time --limit" ;;
        games) opts="--search --players --time" ;;
        meetups) opts="--search --game --course --day --nearby --all --mine --limit" ;;
        game)
            if [[ -z "$sub" ]]; then COMPREPLY=($(compgen -W "show" -- "$cur")); return; fi ;;
        people) opts="--role --search --course --limit" ;;
    esac
    COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
}
complete -F _mentormate mentormate

_mentormated() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --state-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --socket|--config|--network-key) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --log-level) COMPREPLY=($(compgen -W "debug info notice warning error" -- "$cur")); return ;;
        --listen|--peer|--browse-domain) return ;;
    esac
    COMPREPLY=($(compgen -W "--state-dir --socket --listen --peer --no-mdns --hub --browse-domain --config --network-key --network-work-bits --log-level --test-clock-offset --help -h --version" -- "$cur"))
}
complete -F _mentormated mentormated
