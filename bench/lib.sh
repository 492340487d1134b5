# shellcheck shell=bash
# What the bench scripts share: a clock and the median of their runs.

# microseconds since the epoch, from bash's own clock (no process)
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

# the median of the numbers on stdin, one or more a line; of an even
# count, the mean of the two middle ones, rounded down when both are
# whole (microsecond counts stay integers for $(( )))
median() {
	tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
	END { if (NR % 2) { print v[(NR + 1) / 2]; exit }
	      a = v[NR / 2]; b = v[NR / 2 + 1]; m = (a + b) / 2
	      print (a == int(a) && b == int(b) ? int(m) : m) }'
}
