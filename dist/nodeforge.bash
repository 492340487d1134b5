# bash completion for nodeforge: commands, each command's options (from its
# own --help), role names (from the profiles, -C honoured) and node names
# (from the inventory, -i honoured, else racks.yaml).
# Installed by 'make install' as
# PREFIX/share/bash-completion/completions/nodeforge.

_nodeforge_words() {
	local IFS=$'\n'
	COMPREPLY+=($(compgen -W "$1" -- "$2"))
}

_nodeforge() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local nf=${COMP_WORDS[0]} cmd= i w global=() inv=racks.yaml npos=0
	COMPREPLY=()

	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-C | --profiles | --site)
			global+=("$w" "${COMP_WORDS[i + 1]}")
			i=$((i + 1))
			continue
			;;
		-i | --inventory)
			inv=${COMP_WORDS[i + 1]}
			i=$((i + 1))
			continue
			;;
		-*) continue ;;
		esac
		if [ -z "$cmd" ]; then
			cmd=$w
		else
			npos=$((npos + 1))
		fi
	done

	case $prev in
	-C | --profiles | -o | --out | --output | --cache | --root | --sysroot | --tree | \
		--state | --overlays | --images | --kickstart | --ipxe-dir | --artifact-mirror | \
		--run-dir)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	-i | --inventory | --site | --profile | --fixture | --key | --junit | --verdict | --self-package)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--role)
		_nodeforge_words "$("$nf" "${global[@]}" profile list 2>/dev/null | awk '$2 == "role" { print $1 }')" "$cur"
		return
		;;
	-I | --image)
		_nodeforge_words "current
$("$nf" "${global[@]}" profile list 2>/dev/null | awk '$2 == "role" { print $1 "@current" }')" "$cur"
		return
		;;
	--node)
		_nodeforge_words "$("$nf" "${global[@]}" inventory show -i "$inv" 2>/dev/null | awk 'NR > 1 { print $1 }')" "$cur"
		return
		;;
	esac

	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			_nodeforge_words "-C --site --json -q -v --help --version" "$cur"
		else
			_nodeforge_words "$("$nf" --help 2>/dev/null | awk '/^  [a-z]/ { print $1 }')" "$cur"
		fi
		return
	fi
	if [[ $cur == -* ]]; then
		_nodeforge_words "$("$nf" "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u)" "$cur"
		return
	fi
	case $cmd in
	build | ci)
		[ "$npos" -eq 0 ] &&
			_nodeforge_words "$("$nf" "${global[@]}" profile list 2>/dev/null | awk '$2 == "role" { print $1 }')" "$cur"
		;;
	profile)
		if [ "$npos" -eq 0 ]; then
			_nodeforge_words "list show" "$cur"
		else
			_nodeforge_words "$("$nf" "${global[@]}" profile list 2>/dev/null | awk '{ print $1 }')" "$cur"
		fi
		;;
	power | bootdev)
		if [ "$npos" -eq 0 ]; then
			if [ "$cmd" = power ]; then
				_nodeforge_words "on off cycle reset status" "$cur"
			else
				_nodeforge_words "pxe disk" "$cur"
			fi
		else
			_nodeforge_words "$("$nf" "${global[@]}" inventory show -i "$inv" 2>/dev/null | awk 'NR > 1 { print $1 }')" "$cur"
		fi
		;;
	status | reimage)
		_nodeforge_words "$("$nf" "${global[@]}" inventory show -i "$inv" 2>/dev/null | awk 'NR > 1 { print $1 }')" "$cur"
		;;
	*)
		compopt -o default 2>/dev/null
		;;
	esac
}

complete -F _nodeforge nodeforge
