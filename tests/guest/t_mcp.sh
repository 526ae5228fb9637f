# The MCP server (src/mcp/) driven by clients written by others: the official
# TypeScript SDK (mcp_client.mjs) over stdio and over Streamable HTTP through
# every tool, malformed calls and a cancellation, its transcript in the output;
# who may reach the HTTP transport; the official conformance runner against it.
MCP_SOCK=/run/akts/mcp-test.sock
MCP_TOKEN=/run/akts/mcp.token
MCP_PORT=8765

mcp_client() { # args... -> the SDK client, run from a folder that sees the image's node_modules
	local dir=/tmp/mcp-client
	mkdir -p $dir
	cp "$HERE/mcp_client.mjs" $dir/
	ln -sfn /opt/akts/mcp/node_modules $dir/node_modules
	node $dir/mcp_client.mjs "$@"
}

mcp_scenario_left() { # [PID...] -> the scenario programs still running (those pids, and any cyclictest or stress-ng), if any
	local p stat
	for p in "$@"; do
		stat=$(cat /proc/"$p"/stat 2>/dev/null) || continue
		# Still a scenario program (not a pid used again), and not a zombie (which runs nothing).
		[[ $stat =~ ^[0-9]+\ \(((cyclictest|stress-ng)[^\)]*)\)\ ([A-Z]) && ${BASH_REMATCH[3]} != Z ]] &&
			echo "$p ${BASH_REMATCH[1]}"
	done
	pgrep -a -x cyclictest
	pgrep -a -x stress-ng
}

mcp_wait_gone() { # [PID...]: waits up to 3 s for the scenario programs to be gone; 0 when they are
	local i
	for i in $(seq 1 60); do
		[[ -z "$(mcp_scenario_left "$@")" ]] && return 0
		sleep 0.05
	done
	return 1
}

# After a client's session: the programs of the scenario it cancelled (their pids on its CANCELLED line) are
# gone, and none other is left. With no CANCELLED line the client never saw the scenario run (refused, or it
# never started): then nothing here shows a cancellation stopped anything, and that is a failure. (Whether they
# stopped on the cancel itself, the session still open, is the client's verdict: closing the session stops
# running calls too.)
mcp_cancel_followed() { # MODE TRANSCRIPT
	local line pids
	line=$(grep -a $'^CANCELLED\t' "$2" | tail -n 1)
	read -ra pids <<<"$(cut -f 3 <<<"$line")"
	if ((${#pids[@]} == 0)); then
		not_ok "$1: no cancelled scenario to follow: the client saw none of its programs run before the cancel"
	elif mcp_wait_gone "${pids[@]}"; then
		ok "$1: the cancelled scenario's programs (${pids[*]}) are gone, none left after the session"
	else
		not_ok "$1: the cancelled scenario's programs still run: $(mcp_scenario_left "${pids[@]}" | tr '\n' ' ')"
		kill -KILL "${pids[@]}" 2>/dev/null
		pkill -KILL -x cyclictest
		pkill -KILL -x stress-ng
	fi
}

t_mcp() {
	local cfg=$OUT/mcp.json log=$OUT/mcp_daemon.log i
	cat >"$cfg" <<JSON
{"socket": "$MCP_SOCK", "policies": ["latency", "throughput"], "initial": "latency", "state_file": "",
 "audit_log": "$OUT/mcp_audit.jsonl", "decision_log": {"path": "$OUT/mcp_decisions.jsonl"},
 "repository": "$OUT/repository"}
JSON
	akts daemon -c "$cfg" >"$log" 2>&1 &
	local d=$!
	for i in $(seq 1 200); do
		[[ -S $MCP_SOCK ]] && akts status --socket $MCP_SOCK >/dev/null 2>&1 && break
		sleep 0.05
	done
	diag "node $(node --version), @modelcontextprotocol/sdk $(python3 -c 'import json; print(json.load(open("/opt/akts/mcp/node_modules/@modelcontextprotocol/sdk/package.json"))["version"])')"

	# stdio: every tool, malformed calls, resources, a cancellation.
	verdicts < <(mcp_client stdio $MCP_SOCK 2>"$OUT/mcp_stdio.err" | tee "$OUT/mcp_stdio.txt" | grep -v '^CANCELLED')
	mcp_cancel_followed stdio "$OUT/mcp_stdio.txt"
	# Paging: a server with pages of 4 tools; the client follows nextCursor.
	verdicts < <(mcp_client stdio $MCP_SOCK 4 2>>"$OUT/mcp_stdio.err")
	# What MCP changed went through the daemon's audit, with the caller's credentials.
	local audited
	audited=$(python3 - "$OUT/mcp_audit.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
sw = [r for r in recs if r.get("method") == "v1.switch"]
print(len(sw), sum(1 for r in recs if r.get("method") == "v1.objective"), sw[0].get("uid") if sw else None)
PY
)
	if [[ $audited =~ ^[1-9][0-9]*\ [1-9][0-9]*\ 0$ ]]; then
		ok "the switches and the objective set through MCP are in the audit log with the caller's uid (switches, objectives, uid: $audited)"
	else
		not_ok "the audit log holds the MCP actions (switches, objectives, uid: $audited)"
	fi

	# Streamable HTTP: a credential only root can read, loopback only.
	rm -f $MCP_TOKEN
	akts mcp --http 127.0.0.1:$MCP_PORT --socket $MCP_SOCK --token-file $MCP_TOKEN >"$OUT/mcp_http.log" 2>&1 &
	local h=$!
	for i in $(seq 1 100); do
		curl -s -o /dev/null http://127.0.0.1:$MCP_PORT/mcp && break
		sleep 0.05
	done
	local mode nobody_read
	mode=$(stat -c '%a %U' $MCP_TOKEN)
	nobody_read=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat $MCP_TOKEN 2>&1 >/dev/null | head -n1)
	if [[ $mode == "600 root" && $nobody_read == *"Permission denied"* ]]; then
		ok "the HTTP credential is made mode 600 for root; another user cannot read it ($nobody_read)"
	else
		not_ok "the HTTP credential is private (mode $mode; another user reading it: ${nobody_read:-it could})"
	fi
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
	local codes
	codes="$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$init" http://127.0.0.1:$MCP_PORT/mcp)"
	codes+=" $(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'Authorization: Bearer 0000000000000000000000000000000000000000000000000000000000000000' -d "$init" http://127.0.0.1:$MCP_PORT/mcp)"
	codes+=" $(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $(cat $MCP_TOKEN)" -H 'Origin: http://evil.example.com' -d "$init" http://127.0.0.1:$MCP_PORT/mcp)"
	codes+=" $(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $(cat $MCP_TOKEN)" -d "$init" http://127.0.0.1:$MCP_PORT/mcp)"
	if [[ $codes == "401 401 403 200" ]]; then
		ok "HTTP: no credential 401, a wrong one 401, a foreign Origin 403, the credential 200 ($codes)"
	else
		not_ok "HTTP: who may reach it (no credential, wrong, foreign Origin, right: $codes; want 401 401 403 200)"
	fi
	local bind_out
	bind_out=$(akts mcp --http 0.0.0.0:8770 --socket $MCP_SOCK --token-file $MCP_TOKEN 2>&1)
	if [[ $? -eq 2 && $bind_out == *loopback* ]]; then
		ok "HTTP: binding beyond loopback is refused: ${bind_out:0:120}"
	else
		not_ok "HTTP: binding beyond loopback is refused (got: ${bind_out:0:160})"
	fi
	verdicts < <(mcp_client http http://127.0.0.1:$MCP_PORT/mcp $MCP_TOKEN 2>"$OUT/mcp_http_client.err" | tee "$OUT/mcp_http.txt" | grep -v '^CANCELLED')
	mcp_cancel_followed HTTP "$OUT/mcp_http.txt"

	# The official conformance runner, through a client that holds the credential (it cannot send one).
	python3 "$HERE/mcp_auth_proxy.py" 8766 $MCP_PORT $MCP_TOKEN &
	local proxy=$!
	wait_port 8766
	local conf=/opt/akts/mcp/node_modules/@modelcontextprotocol/conformance/dist/index.js
	timeout 600 node $conf server --url http://localhost:8766/mcp \
		--expected-failures "$HERE/mcp_expected_failures.yaml" -o "$OUT/conformance" >"$OUT/conformance.txt" 2>&1
	local crc=$?
	grep -aE 'Passed|Failed|passed|failed|Total|expected' "$OUT/conformance.txt" | tail -n 6 | while IFS= read -r line; do diag "conformance: $line"; done
	if ((crc == 0)); then
		ok "the MCP conformance runner passes against the HTTP transport (its expected failures: mcp_expected_failures.yaml)"
	else
		not_ok "the MCP conformance runner (exit $crc): see conformance.txt"
		tail -n 40 "$OUT/conformance.txt" | while IFS= read -r line; do diag "$line"; done
	fi
	kill $proxy 2>/dev/null
	wait $proxy 2>/dev/null

	kill -TERM $h
	wait $h
	local hrc=$?
	kill -INT $d
	wait $d
	local drc=$?
	if ((hrc == 0 && drc == 0)); then
		ok "akts mcp --http and the daemon stopped cleanly"
	else
		not_ok "clean stops (akts mcp $hrc, daemon $drc)"
	fi
}
