# gpudiag's fallback collector for nodes without python3: POSIX sh, prints the same gpudiag.probe/2
# document as probe.py (collector "sh"). Run as: sh -c "$(this file)" gpudiag SAMPLES INTERVAL FIELD...
# where each FIELD is "logical=name1|name2" (the controller passes probe.py's FIELDS table as quoted
# arguments, so the table lives in one place and nothing is pasted into this script).
samples=$1; interval=$2; shift 2

json_str() {
    # Escape text as a JSON string body: backslash, quote, tab; drop other control bytes; join lines.
    printf '%s' "$1" | tr -d '\000-\010\013-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' \
        | awk 'BEGIN { ORS = "" } NR > 1 { print "\\n" } { print }'
}

# Arguments "@note=TEXT" are not fields: sentences for the document's problems (e.g. "the logs were not
# scanned": that needs python3). "@bound=S": each nvidia-smi call is killed after S seconds (a wedged driver
# never answers), and the document says which call hung, so the host still answers within its deadline.
problems=""; bound=""; hung=""
for spec in "$@"; do
    case $spec in
        @note=*) problems="$problems${problems:+,}\"$(json_str "${spec#@note=}")\"" ;;
        @bound=*) bound=${spec#@bound=} ;;
    esac
done

smi_call() {
    # `timeout` exits 124 when it had to end the call (its -k KILL follows a TERM that was not enough).
    if [ -n "$bound" ] && command -v timeout >/dev/null 2>&1; then
        LC_ALL=C timeout -k 2 "$bound" "$smi" "$@"
    else
        LC_ALL=C "$smi" "$@"
    fi
}

host=$(hostname 2>/dev/null || uname -n)
kernel=$(uname -r)
printf '{"schema":"gpudiag.probe/2","collector":"sh","host":{"hostname":"%s","kernel":"%s"},' \
    "$(json_str "$host")" "$(json_str "$kernel")"

smi=$(command -v nvidia-smi 2>/dev/null)
if [ -z "$smi" ]; then
    for d in /usr/bin /usr/local/bin /usr/local/nvidia/bin /usr/lib/wsl/lib /opt/nvidia/bin; do
        if [ -x "$d/nvidia-smi" ]; then smi="$d/nvidia-smi"; break; fi
    done
fi
if [ -z "$smi" ]; then
    printf '"nvidia_smi":{"path":null,"status":"missing"},"fields":[],"samples":[],"cuda_version":null,"problems":[%s]}\n' "$problems"
    exit 0
fi

help=$(smi_call --help-query-gpu 2>&1); help_exit=$?
known=$(printf '%s\n' "$help" | grep '^"' | grep -o '"[^"]*"' | tr -d '"')
printf '"nvidia_smi":{"path":"%s","help_exit":%d},"fields":[' "$(json_str "$smi")" "$help_exit"

query=""; sep=""
for spec in "$@"; do
    case $spec in @*) continue ;; esac
    logical=${spec%%=*}; names=${spec#*=}
    chosen=""
    old_ifs=$IFS; IFS='|'
    for name in $names; do
        if printf '%s\n' "$known" | grep -qxF "$name"; then chosen=$name; break; fi
    done
    IFS=$old_ifs
    if [ -n "$chosen" ]; then
        printf '%s["%s","%s"]' "$sep" "$logical" "$chosen"
        query="$query${query:+,}$chosen"; sep=","
    fi
done
printf '],"samples":['

i=0; sep=""; stop=""
while [ "$i" -lt "$samples" ] && [ -z "$stop" ]; do
    if [ "$i" -gt 0 ]; then sleep "$interval"; fi
    errfile=${TMPDIR:-/tmp}/gpudiag.$$.err
    # nvidia-smi's exit status travels behind a marker: a pipeline would report the last command's.
    out=$(smi_call --query-gpu="$query" --format=csv,noheader,nounits 2>"$errfile" </dev/null; echo "@exit=$?")
    code=${out##*@exit=}; out=${out%@exit=*}
    err=$(head -c 65536 "$errfile" 2>/dev/null); rm -f "$errfile"
    t=$(awk -v i="$i" -v s="$interval" 'BEGIN { printf "%.3f", i * s }')
    printf '%s{"t_s":%s,"exit":%d,"stdout":"%s","stderr":"%s"}' "$sep" "$t" "$code" "$(json_str "$out")" "$(json_str "$err")"
    sep=","
    case $code in 6|9|12|127) stop=1 ;; esac
    if [ "$code" = 124 ] && [ -n "$bound" ]; then  # hung: asking again would hang again
        hung="{\"call\":\"nvidia-smi --query-gpu\",\"after_s\":$bound}"; stop=1
    fi
    i=$((i + 1))
done

cuda=""
if [ -z "$hung" ]; then  # the header of a wedged driver would hang the same way
    cuda=$(smi_call 2>/dev/null </dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)
fi
if [ -n "$cuda" ]; then cuda="\"$cuda\""; else cuda=null; fi
printf '],"cuda_version":%s,"hung":[%s],"problems":[%s]}\n' "$cuda" "$hung" "$problems"
