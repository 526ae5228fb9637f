# The execution plane's own checks, one TAP line each (see src/selftest).
t_selftest() {
	local json="$OUT/selftest.json" rc
	akts selftest --json >"$json" 2>"$OUT/selftest.stderr"
	rc=$?
	if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$json" 2>/dev/null; then
		not_ok "selftest printed valid JSON (exit $rc)"
		sed 's/^/# /' "$OUT/selftest.stderr" | tail -n 20
		return
	fi
	while IFS=$'\t' read -r status name detail; do
		case "$status" in
		pass) ok "$name: $detail" ;;
		skip) not_ok "$name skipped: $detail" ;;
		*) not_ok "$name: $detail" ;;
		esac
	done < <(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    print(c["status"], c["name"], c["detail"].replace("\t", " ").replace("\n", " "), sep="\t")
' "$json")
	if ((rc != 0)) && ! grep -q '"status": "fail"' "$json"; then
		not_ok "selftest exit status $rc without a failing check"
	fi
}
