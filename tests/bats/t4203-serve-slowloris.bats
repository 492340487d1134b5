#!/usr/bin/env bats
# nodeforge serve against slowloris: one address holding its maximum of
# connections that trickle header bytes cannot keep another client from
# being served, and a request head that does not arrive whole within the
# head deadline has its connection closed.  Bounded, loopback only: the
# holding address is 127.0.0.1, the other client 127.0.0.2.
load helper

setup() {
	nf_setup
	mkdir tree
	echo 'hello' > tree/hello.txt
}

teardown() {
	[ -n "${HOLD_PID:-}" ] && kill "$HOLD_PID" 2>/dev/null && wait "$HOLD_PID" 2>/dev/null
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

# trickle PORT N SECONDS: open N connections from 127.0.0.1, each sending
# one header byte every 0.5 s for SECONDS; prints "open N" once all are
# connected, then per connection the time (s) the server closed it, or
# "held" when it was still open at the end
trickle() {
	python3 - "$@" <<'PY'
import socket, sys, time
port, n, dur = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
conns = []
for _ in range(n):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /hello.txt HTTP/1.1\r\nX-A: ")
    s.setblocking(False)
    conns.append([s, None])
print("open", n, flush=True)
t0 = time.monotonic()
while time.monotonic() - t0 < dur and any(c[1] is None for c in conns):
    for c in conns:
        if c[1] is not None:
            continue
        try:
            c[0].send(b"a")
            if c[0].recv(1) == b"":
                c[1] = time.monotonic() - t0
        except BlockingIOError:
            pass
        except OSError:
            c[1] = time.monotonic() - t0
    time.sleep(0.5)
for c in conns:
    print("held" if c[1] is None else "%.1f" % c[1])
PY
}

@test "one address at its connection limit: its next connection is closed, another client is served at once" {
	nf_serve_bg --tree tree --state state --threads 2
	trickle "$PORT" 64 6 > hold.out &
	HOLD_PID=$!
	for _ in $(seq 100); do grep -q '^open' hold.out && break; sleep 0.05; done
	grep -qx 'open 64' hold.out
	sleep 0.5
	# the 65th from the same address is closed without an answer
	run python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
try:
    print(repr(s.recv(100)))
except (ConnectionResetError, TimeoutError) as e:
    print(type(e).__name__)' "$PORT"
	echo "65th: $output"
	[[ "$output" == "b''" || "$output" == ConnectionResetError ]]
	# another address is served, quickly
	run curl -s --interface 127.0.0.2 --max-time 2 -w ' %{http_code} %{time_total}' "$U/hello.txt"
	echo "other client: $output"
	[[ "$output" == "hello"$'\n'" 200 "* ]]
	awk -v t="${output##* }" 'BEGIN { exit !(t < 1.0) }'
	wait "$HOLD_PID"
	HOLD_PID=
	# the 64 were held (not closed by the limit) until the trickler stopped
	[ "$(grep -c '^held$' hold.out)" = 64 ]
}

@test "a request head trickled past --head-timeout is closed; a whole one is served" {
	nf_serve_bg --tree tree --state state --threads 2 --head-timeout 2 --per-address 4
	run trickle "$PORT" 4 8
	echo "$output"
	[ "${lines[0]}" = 'open 4' ]
	# closed at 2 s (the sweeper looks 4 times a second), long before
	# the 30 s idle timeout that every byte restarts
	for t in "${lines[@]:1}"; do
		[ "$t" != held ]
		awk -v t="$t" 'BEGIN { exit !(t >= 1.0 && t <= 4.0) }'
	done
	grep -q '127.0.0.1 "(request not complete in 2 s)" 408 0' serve.log
	# closed connections free the address's places
	[ "$(curl -s --max-time 2 "$U/hello.txt")" = hello ]
	# a keep-alive connection: two requests 3 s apart, each head whole
	run python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
out = b""
for i in range(2):
    s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.5)
    out += s.recv(4096)
    if i == 0:
        time.sleep(1)
print(out.count(b"hello\n"))' "$PORT"
	[ "$output" = 2 ]
}

@test "--head-timeout and --per-address take whole numbers" {
	run "$NF_BIN" serve --tree tree --head-timeout 0
	status_is 2
	[[ "$output" == *"invalid --head-timeout '0': expected a number from 1 to 3600"* ]]
	run "$NF_BIN" serve --tree tree --per-address 12x
	status_is 2
	[[ "$output" == *"invalid --per-address '12x'"* ]]
	run "$NF_BIN" serve --help
	[[ "$output" == *"--head-timeout SECONDS"* && "$output" == *"--per-address N"* ]]
}

@test "serve raises its soft limit on open files to the hard one" {
	command -v prlimit >/dev/null || skip "prlimit not installed"
	: > serve.log
	prlimit --nofile=512:4096 "$NF_BIN" serve --listen 127.0.0.1:0 --tree tree \
		--state state > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	for _ in $(seq 100); do grep -q '^listening on' serve.log && break; sleep 0.05; done
	grep -q '^listening on' serve.log
	grep -E '^Max open files +4096 +4096 ' "/proc/$SERVE_PID/limits"
}

@test "a request body trickled past --head-timeout is closed too" {
	nf_serve_bg --tree tree --state state --threads 2 --head-timeout 2
	run python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/nodes/x/verdict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
s.setblocking(False)
t0 = time.monotonic()
while time.monotonic() - t0 < 8:
    try:
        s.send(b"a")
        if s.recv(1) == b"":
            break
    except BlockingIOError:
        pass
    except OSError:
        break
    time.sleep(0.5)
print("%.1f" % (time.monotonic() - t0))' "$PORT"
	echo "closed after $output s"
	awk -v t="$output" 'BEGIN { exit !(t >= 1.0 && t <= 4.0) }'
}
