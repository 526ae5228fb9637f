# `akts top` driven in tmux (send-keys, capture-pane), as a person at a terminal would: it shows a switch made
# elsewhere within 2 s, its key switches the policy (after a confirmation), p pauses the controller and resumes
# it, a small terminal is told so, a daemon that goes away and comes back is followed, q quits. The two checks that
# matter most are run again with the test-only switches (src/top/top_screen.h) and must fail then: with the refresh
# frozen, the switch made elsewhere is not shown; with the keys dead, the key switches nothing.
TOP_SOCK=/run/akts/top.sock

top_pane() { tmux capture-pane -p -t akts-top 2>/dev/null; }
# top_status EXPR: a Python expression on the daemon's status `s`.
top_status() {
	akts status --json --socket "$TOP_SOCK" | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)" 2>/dev/null
}

# top_wait TEXT SECONDS: 0 when the pane shows TEXT within SECONDS.
top_wait() {
	local i n
	n=$(awk -v s="$2" 'BEGIN { print int(s * 20) }')
	for ((i = 0; i < n; i++)); do
		top_pane | grep -qF -- "$1" && return 0
		sleep 0.05
	done
	return 1
}

# top_start [ENV=VALUE...]: akts top in a 100x30 tmux session whose pane stays after akts top ends (its exit
# status readable), up and showing the running policy.
top_start() {
	tmux kill-session -t akts-top 2>/dev/null
	tmux new-session -d -s akts-top -x 100 -y 30 "env $* akts top --socket $TOP_SOCK" &&
		tmux set-option -t akts-top remain-on-exit on >/dev/null &&
		top_wait "running  " 10
}

# The checks, each 0 (held) or 1: a switch made elsewhere shown within 2 s; the s key switching the policy.
top_check_refresh() {
	local target=$1 t0
	t0=$(date +%s%N)
	akts switch --socket "$TOP_SOCK" "$target" >/dev/null || return 1
	top_wait "running  $target for" 2 || return 1
	echo "$(((($(date +%s%N) - t0) / 1000000))) ms"
}
top_check_key() {
	local digit=$1 want=$2 i
	[[ $(top_status 's["selected"]["policy"]') != "$want" ]] || return 1  # else it would hold by itself
	tmux send-keys -t akts-top s
	top_wait "switch to:" 2 || return 1
	tmux send-keys -t akts-top "$digit"
	top_wait "switch to $want?" 2 || return 1
	tmux send-keys -t akts-top y
	for i in $(seq 1 40); do
		[[ $(top_status 's["selected"]["policy"]') == "$want" ]] && return 0
		sleep 0.05
	done
	return 1
}

t_top() {
	if ! command -v tmux >/dev/null; then
		not_ok "tmux is in the guest image (vm/build_image.sh)"
		return
	fi
	local cfg=/tmp/akts-top.json log=$OUT/top_daemon.log out
	cat >"$cfg" <<JSON
{"socket": "$TOP_SOCK", "policies": ["latency", "throughput"], "initial": "latency", "audit_log": "", "state_file": "",
 "classes": [{"class": "be", "comm": "stress-ng"}]}
JSON
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local dpid=$!
	for i in $(seq 1 100); do [[ -S $TOP_SOCK ]] && break; sleep 0.1; done
	if top_start; then
		ok "akts top shows the running policy in tmux (TERM=$(tmux show -gv default-terminal 2>/dev/null))"
	else
		not_ok "akts top shows the running policy in tmux: $(top_pane | head -n 5 | tr '\n' '|')"
	fi
	if out=$(top_check_refresh throughput); then
		ok "a switch made elsewhere shows in akts top within 2 s ($out)"
	else
		not_ok "a switch made elsewhere shows in akts top within 2 s: $(top_pane | head -n 2 | tr '\n' '|')"
	fi
	if top_check_key 0 latency; then
		ok "akts top's s, 0, y switches the policy to latency"
	else
		not_ok "akts top's s, 0, y switches the policy: $(top_pane | tail -n 3 | tr '\n' '|')"
	fi
	# A choice that is not confirmed changes nothing.
	tmux send-keys -t akts-top s
	top_wait "switch to:" 2 && tmux send-keys -t akts-top 1
	top_wait "switch to throughput?" 2 && tmux send-keys -t akts-top n
	if top_wait "cancelled: nothing changed" 2 && [[ $(top_status 's["selected"]["policy"]') == latency ]]; then
		ok "a switch not confirmed (n) changes nothing"
	else
		not_ok "a switch not confirmed (n) changes nothing: $(top_pane | tail -n 2 | tr '\n' '|')"
	fi
	# p pauses the controller (a hold on the selection), p again resumes.
	tmux send-keys -t akts-top p
	if top_wait "PAUSED" 3 && [[ $(top_status 's["reasoning"]["arbiter"]["hold"] is not None') == True ]]; then
		ok "p pauses the controller: the selection is held, and akts top says PAUSED"
	else
		not_ok "p pauses the controller: $(top_pane | sed -n 2p)"
	fi
	tmux send-keys -t akts-top p
	sleep 1
	if ! top_pane | grep -q PAUSED && [[ $(top_status 's["reasoning"]["arbiter"]["hold"] is None') == True ]]; then
		ok "p again resumes it"
	else
		not_ok "p again resumes it: $(top_pane | sed -n 2p)"
	fi
	# A small terminal is told so; a larger one again shows the view.
	tmux resize-window -t akts-top -x 30 -y 8
	top_wait "akts top needs 40x12" 3 && ok "a 30x8 terminal is told it is too small: $(top_pane | head -n 1)" ||
		not_ok "a 30x8 terminal is told it is too small: $(top_pane | head -n 1)"
	tmux resize-window -t akts-top -x 100 -y 30
	top_wait "running  " 3 && ok "back at 100x30 the view returns" || not_ok "back at 100x30 the view returns"
	# The daemon goes away and comes back.
	kill -TERM $dpid
	wait $dpid
	top_wait "does not answer" 3 && ok "a daemon that went away is shown as such" ||
		not_ok "a daemon that went away is shown as such: $(top_pane | head -n 2 | tr '\n' '|')"
	akts daemon -c "$cfg" >>"$log" 2>&1 &
	dpid=$!
	for i in $(seq 1 150); do [[ -S $TOP_SOCK ]] && break; sleep 0.1; done
	top_wait "running  latency" 6 && ok "a daemon that came back is followed again" ||
		not_ok "a daemon that came back is followed again: $(top_pane | head -n 2 | tr '\n' '|')"
	tmux send-keys -t akts-top q
	sleep 1
	out=$(tmux display-message -p -t akts-top '#{pane_dead} #{pane_dead_status}' 2>&1)
	[[ $out == "1 0" ]] && ok "q quits akts top (exit 0)" || not_ok "q quits akts top (pane dead, status: $out)"

	# The negative controls: each check fails when the test-only switch breaks what it checks (akts top up and
	# showing the running policy first, so that a top that did not start cannot pass for one).
	top_start AKTS_TOP_TEST_FREEZE=1 || not_ok "akts top starts with AKTS_TOP_TEST_FREEZE=1"
	if out=$(top_check_refresh throughput); then
		not_ok "with the refresh frozen, the refresh check fails (it held: $out)"
	else
		ok "with the refresh frozen (AKTS_TOP_TEST_FREEZE=1), the refresh check fails"
	fi
	tmux kill-session -t akts-top 2>/dev/null
	top_start AKTS_TOP_TEST_DEAD_KEYS=1 || not_ok "akts top starts with AKTS_TOP_TEST_DEAD_KEYS=1"
	if top_check_key 0 latency; then
		not_ok "with the keys dead, the key check fails (it switched)"
	else
		ok "with the keys dead (AKTS_TOP_TEST_DEAD_KEYS=1), the key check fails"
	fi
	tmux kill-session -t akts-top 2>/dev/null
	kill -TERM $dpid
	wait $dpid
}
