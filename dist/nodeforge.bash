# bash completion for nodeforge.  Everything comes from the binary itself
# ('nodeforge __complete WORD... CUR', a hidden command): the commands, each
# command's subcommands and options (from its --help), role names (from the
# profiles, -C honoured), node names and racks (from the inventory, -i
# honoured, else racks.yaml) and status's states.
# Installed by 'make install' as
# PREFIX/share/bash-completion/completions/nodeforge.

_nodeforge() {
	local cur=${COMP_WORDS[COMP_CWORD]} line
	local IFS=$'\n'
	COMPREPLY=()
	local -a out
	out=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
	case ${out[0]-} in
	@dir)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "$cur"))
		;;
	@file)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	*)
		for line in "${out[@]}"; do
			COMPREPLY+=("$line")
		done
		;;
	esac
}

complete -F _nodeforge nodeforge
