# shellcheck shell=bash
# Shared by scripts/mysql-server, scripts/postgres-server and scripts/galera-cluster: where a
# throw-away server keeps its state, and the checks that make `stop` safe.
#
# Threat: another local user must not be able to make these scripts delete a directory or
# kill a process of their choice, nor read the generated password. So:
#
# - State (one `<script>.state` + `<script>.env` per script) lives in a private directory:
#   $ASYNCBENCH_STATE_DIR, else $XDG_RUNTIME_DIR/asyncbench (when that is a directory of
#   ours), else $HOME/.cache/asyncbench. It is created 0700 and refused when it is a
#   symlink, not ours, has group/other permission bits, or sits in a directory that others
#   may write without the sticky bit. Its files are written 0600 (umask 077) and read by a
#   strict key=value parser, never sourced.
# - A server's data lives in a fresh `mktemp -d` directory (0700) directly in the temp dir
#   (${TMPDIR:-/tmp}, resolved), holding a marker file with a random token that is also in
#   the state file, and the resolved path of the state dir that started it (the tie: how
#   `stop` finds its server when the state file is missing or not trustworthy). Nothing is
#   deleted unless the path is that shape, a real directory (not a symlink), owned by the
#   expected user, mode 0700, and its marker (a regular file of ours) carries the token
#   recorded in the state file, or, when found by the search, names this state dir.
# - A pid is signalled only when /proc/PID is owned by the expected user, started at the
#   recorded clock tick (no pid reuse), runs the expected executable, and has the expected
#   data directory as an exact argument on its command line.
#
# - `stop` (stop_all) stops every server of this state dir, whatever its state file says:
#   the recorded server when its pid is proven, and the servers of every work dir whose
#   marker names this state dir (found in the temp dir, verified as above), by their data
#   directory argument. A missing, malformed or symlinked state file, a pid that is now
#   another process, a recorded dir that is not ours: none of them is signalled or deleted,
#   and none of them keeps the real server running. A server that still runs afterwards is
#   named with the commands that stop it.
#
# The caller sets SCRIPT_NAME (used in messages and file names) before sourcing this file,
# and, for stop_all: WORK_PREFIX, SERVER_NAMES (its executables), SYSTEM_USER (who the
# server runs as when we are root), STOP_SIGNAL, STOP_TIMEOUT_S, NODE_KEYS (the suffixes
# of the state's pid/start keys, "" for one server) and a function node_arg DIR KEY (the
# data directory argument of that server of work dir DIR).
# Everything here prints to stderr only: stdout is reserved for the export lines.

umask 077  # every file and dir these scripts create is private to the user

log() { echo "$SCRIPT_NAME: $*" >&2; }
die() { log "$*"; exit 1; }

# --- the private state directory -------------------------------------------------------

# Prints "uid mode" (mode in octal, e.g. 700 or 1777) of a path, not following symlinks.
owner_mode() { stat -c '%u %a' -- "$1"; }

# Exit unless $1 is a directory of ours (not a symlink) with no group/other bits.
check_private_dir() {
    local dir="$1" uid mode
    [[ -L "$dir" ]] && die "refusing: state dir $dir is a symlink"
    [[ -d "$dir" ]] || die "refusing: state dir $dir is not a directory"
    read -r uid mode < <(owner_mode "$dir")
    [[ "$uid" == "$EUID" ]] || die "refusing: state dir $dir is owned by uid $uid, not by us ($EUID)"
    (( (8#$mode & 8#077) == 0 )) || die "refusing: state dir $dir has mode $mode, expected 700 (chmod 700 it or remove it)"
}

# Exit unless the parent of the state dir cannot be used by others to swap the state dir:
# it must be ours or root's, and not writable by group/other unless sticky (like /tmp).
check_parent_dir() {
    local parent="$1" uid mode m
    [[ -d "$parent" ]] || die "refusing: $parent is not a directory"
    read -r uid mode < <(stat -L -c '%u %a' -- "$parent")
    [[ "$uid" == "$EUID" || "$uid" == 0 ]] || die "refusing: $parent (parent of the state dir) is owned by uid $uid"
    m=$((8#$mode))
    if (( (m & 8#022) != 0 && (m & 8#1000) == 0 )); then
        die "refusing: $parent (parent of the state dir) is writable by others and not sticky (mode $mode)"
    fi
}

# Sets STATE_DIR to the private state directory, creating it 0700 when missing.
init_state_dir() {
    local dir uid
    if [[ -n "${ASYNCBENCH_STATE_DIR:-}" ]]; then
        dir="$ASYNCBENCH_STATE_DIR"
    elif [[ -n "${XDG_RUNTIME_DIR:-}" && -d "$XDG_RUNTIME_DIR" && ! -L "$XDG_RUNTIME_DIR" ]] \
        && uid="$(stat -c %u -- "$XDG_RUNTIME_DIR")" && [[ "$uid" == "$EUID" ]]; then
        dir="$XDG_RUNTIME_DIR/asyncbench"
    else
        dir="${HOME:?HOME is not set}/.cache/asyncbench"
    fi
    [[ "$dir" == /* ]] || die "refusing: state dir $dir is not an absolute path"
    dir="${dir%/}"
    if [[ ! -e "$dir" && ! -L "$dir" ]]; then
        mkdir -p -- "$(dirname -- "$dir")"
        # Not -p: fails (and is then checked below) when someone else created it meanwhile.
        mkdir -m 700 -- "$dir" 2>/dev/null || true
    fi
    check_parent_dir "$(dirname -- "$dir")"
    check_private_dir "$dir"
    STATE_DIR="$dir"
    # the tie written into each work dir's marker: one spelling per state dir
    STATE_DIR_REAL="$(realpath -e -- "$dir")"
    STATE_FILE="$STATE_DIR/$SCRIPT_NAME.state"
    ENV_FILE="$STATE_DIR/$SCRIPT_NAME.env"
}

# Serializes start/stop/status of this script on this state dir (held until exit).
lock_state() {
    exec 9>>"$STATE_DIR/$SCRIPT_NAME.lock"
    flock -w 120 9 || die "another $SCRIPT_NAME command holds $STATE_DIR/$SCRIPT_NAME.lock"
}

# Writes stdin to $1 atomically, mode 0600.
write_private() {
    local target="$1" tmpfile
    tmpfile="$(umask 077 && mktemp "$target.XXXXXX")"
    cat >"$tmpfile"
    chmod 600 -- "$tmpfile"
    mv -f -- "$tmpfile" "$target"
}

# Fails unless $1 is a regular file (not a symlink) of ours; used before reading state.
check_own_file() {
    local f="$1" uid mode
    [[ -L "$f" ]] && { log "refusing: $f is a symlink"; return 1; }
    [[ -f "$f" ]] || { log "refusing: $f is not a regular file"; return 1; }
    read -r uid mode < <(owner_mode "$f")
    [[ "$uid" == "$EUID" ]] || { log "refusing: $f is owned by uid $uid, not by us"; return 1; }
    (( (8#$mode & 8#077) == 0 )) || { log "refusing: $f has mode $mode, expected 600"; return 1; }
}

# Reads STATE_FILE into the associative array STATE (keys [a-z_0-9]+, values without
# newlines). Returns 1 when there is no state file, 2 (logging why, STATE left empty) when
# it is not trustworthy: not a regular file of ours, or a malformed line.
declare -gA STATE=()
load_state() {
    local key value line
    STATE=()
    [[ -e "$STATE_FILE" || -L "$STATE_FILE" ]] || return 1
    check_own_file "$STATE_FILE" || return 2
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ -z "$line" || "$line" == \#* ]] && continue
        if [[ ! "$line" =~ ^([a-z_0-9]+)=(.*)$ ]]; then
            log "refusing: malformed line in $STATE_FILE: $line"
            STATE=()
            return 2
        fi
        key="${BASH_REMATCH[1]}"; value="${BASH_REMATCH[2]}"
        # shellcheck disable=SC2034  # read by the scripts that source this file
        STATE[$key]="$value"
    done <"$STATE_FILE"
    return 0
}

# load_state for start, status and env: returns 1 when there is no state file, exits when
# it is not trustworthy.
read_state() {
    local rc=0
    load_state || rc=$?
    (( rc != 2 )) || die "refusing to use $STATE_FILE; inspect it and delete it by hand (\`$0 stop\` stops the server without it)"
    return "$rc"
}

forget_state() { rm -f -- "$STATE_FILE" "$ENV_FILE"; }

# --- the private work directory ---------------------------------------------------------

# The resolved temp dir that work dirs are created in (and must be found in).
temp_base() { realpath -e -- "${TMPDIR:-/tmp}"; }

# Creates a fresh private work dir "$(temp_base)/$1.XXXXXXXXXX" with a marker carrying a
# new random token and the state dir (init_state_dir first). Sets WORK_DIR and WORK_TOKEN.
make_work_dir() {
    local prefix="$1"
    WORK_DIR="$(mktemp -d "$(temp_base)/$prefix.XXXXXXXXXX")"
    chmod 700 -- "$WORK_DIR"
    WORK_TOKEN="$(random_hex 16)"
    (umask 077 && printf 'asyncbench %s %s\nstate_dir=%s\n' "$SCRIPT_NAME" "$WORK_TOKEN" "$STATE_DIR_REAL" \
        >"$WORK_DIR/.asyncbench-marker")
}

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# verify_work_dir DIR TOKEN PREFIX OWNER_UID: returns 0 when DIR is the work dir this
# script created (see the header); logs the reason and returns 1 otherwise.
verify_work_dir() {
    local dir="$1" token="$2" prefix="$3" owner="$4" base uid mode marker
    base="$(temp_base)"
    if [[ ! "$dir" =~ ^/[A-Za-z0-9._/-]+$ || "$dir" == *..* ]]; then
        log "refusing: recorded work dir '$dir' is not a plain absolute path"; return 1
    fi
    if [[ "$(dirname -- "$dir")" != "$base" || ! "$(basename -- "$dir")" =~ ^${prefix}\.[A-Za-z0-9]{10}$ ]]; then
        log "refusing: recorded work dir $dir is not a $prefix.XXXXXXXXXX dir in $base"; return 1
    fi
    if [[ -L "$dir" || ! -d "$dir" ]]; then
        log "refusing: recorded work dir $dir is not a real directory"; return 1
    fi
    read -r uid mode < <(owner_mode "$dir")
    if [[ "$uid" != "$owner" || "$mode" != 700 ]]; then
        log "refusing: recorded work dir $dir is uid $uid mode $mode, expected uid $owner mode 700"; return 1
    fi
    marker="$dir/.asyncbench-marker"
    if ! check_own_file "$marker" 2>/dev/null; then
        log "refusing: $dir has no marker file of ours; this script did not create it"; return 1
    fi
    # the first line; a marker written before the state_dir line existed has only that one
    if [[ ! "$token" =~ ^[0-9a-f]{32}$ || "$(head -n 1 -- "$marker")" != "asyncbench $SCRIPT_NAME $token" ]]; then
        log "refusing: the marker in $dir does not carry the recorded token"; return 1
    fi
    return 0
}

# --- processes ---------------------------------------------------------------------------

# Clock tick at which PID started (field 22 of /proc/PID/stat), or fails.
proc_start() {
    local stat rest
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    rest="${stat##*) }"  # the fields after "(comm) "; comm may hold spaces and parens
    # shellcheck disable=SC2086  # word splitting of the numeric fields is the point
    set -- $rest
    echo "${20}"
}

pid_alive() { [[ "$1" =~ ^[1-9][0-9]*$ ]] && [[ -d "/proc/$1" ]]; }

# verify_pid PID START OWNER_UID EXE_NAMES ARG: returns 0 when PID is alive and is the
# server this script started: owner OWNER_UID, started at clock tick START, executable
# named one of EXE_NAMES (space separated), and ARG exactly one of its arguments.
verify_pid() {
    local pid="$1" start="$2" owner="$3" names="$4" arg="$5" uid exe name
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] || { log "refusing: recorded pid '$pid' is not a pid"; return 1; }
    # The effective uid from status: /proc/PID itself shows root for a non-dumpable process.
    uid="$(awk '/^Uid:/ {print $3}' "/proc/$pid/status" 2>/dev/null)" || uid=""
    [[ -n "$uid" ]] || { log "pid $pid is not running"; return 1; }
    [[ "$uid" == "$owner" ]] || { log "refusing: pid $pid belongs to uid $uid, not $owner"; return 1; }
    [[ "$(proc_start "$pid")" == "$start" ]] \
        || { log "refusing: pid $pid is not the process that was started (start time differs)"; return 1; }
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || { log "refusing: cannot read /proc/$pid/exe"; return 1; }
    exe="${exe% (deleted)}"
    name="$(basename -- "$exe")"
    [[ " $names " == *" $name "* ]] || { log "refusing: pid $pid runs $exe, not one of: $names"; return 1; }
    if ! tr '\0' '\n' <"/proc/$pid/cmdline" | grep -Fxq -- "$arg"; then
        log "refusing: pid $pid was not started with $arg"; return 1
    fi
    return 0
}

# stop_verified_pid PID START OWNER EXE_NAMES ARG TIMEOUT_S [SIGNAL]: SIGNAL (TERM), wait,
# then KILL; the identity is checked again before each signal.
stop_verified_pid() {
    local pid="$1" start="$2" owner="$3" names="$4" arg="$5" timeout_s="$6" sig="${7:-TERM}" i
    verify_pid "$pid" "$start" "$owner" "$names" "$arg" || return 1
    kill -"$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < timeout_s * 10; i++)); do
        [[ "$(proc_start "$pid" 2>/dev/null)" == "$start" ]] || return 0
        sleep 0.1
    done
    if verify_pid "$pid" "$start" "$owner" "$names" "$arg" 2>/dev/null; then
        log "pid $pid ignored $sig for ${timeout_s}s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            [[ "$(proc_start "$pid" 2>/dev/null)" == "$start" ]] || return 0
            sleep 0.1
        done
    fi
    return 0
}

# find_server_pids OWNER EXE_NAMES ARG: the live processes owned by OWNER, running one of
# EXE_NAMES, with ARG (the server's data directory, inside a verified work dir) exactly one
# of their arguments, one pid a line. How `stop` finds a server whose recorded pid is
# missing, stale or not a pid: the data directory identifies it whatever the state says.
find_server_pids() {
    local owner="$1" names="$2" arg="$3" d uid exe a found
    local -a args
    for d in /proc/[0-9]*; do
        # the argument first, read without forking (a busy machine has hundreds of processes)
        args=()
        mapfile -d '' -t args <"$d/cmdline" 2>/dev/null || continue
        found=0
        for a in "${args[@]}"; do
            if [[ "$a" == "$arg" ]]; then found=1; break; fi
        done
        (( found )) || continue
        uid="$(awk '/^Uid:/ {print $3}' "$d/status" 2>/dev/null)" || continue
        [[ "$uid" == "$owner" ]] || continue
        exe="$(readlink "$d/exe" 2>/dev/null)" || continue
        exe="${exe% (deleted)}"
        [[ " $names " == *" $(basename -- "$exe") "* ]] || continue
        echo "${d#/proc/}"
    done
}

# --- stop: every server of this state dir -------------------------------------------------

# The uids a work dir and its servers may have: ours, and as root SYSTEM_USER's (the
# scripts run servers as that user when they are root, never as root).
server_uids() {
    echo "$EUID"
    if (( EUID == 0 )); then id -u "$SYSTEM_USER" 2>/dev/null || true; fi
}

# marker_tie DIR: prints the first line and the state_dir value of DIR's marker (two
# lines), or fails when it has no state_dir line (written before the tie existed) or
# cannot be read. A cheap filter only: verify_work_dir is the check.
marker_tie() {
    local marker="$1/.asyncbench-marker" first tie
    [[ -d "$1" && ! -L "$1" && -f "$marker" && ! -L "$marker" ]] || return 1
    # timeout: a marker swapped for a FIFO after the -f test must not hang the search
    { IFS= read -r first && IFS= read -r tie; } < <(timeout 2 head -n 2 -- "$marker" 2>/dev/null) || return 1
    [[ "$tie" == state_dir=/* ]] || return 1
    printf '%s\n%s\n' "$first" "${tie#state_dir=}"
}

# find_work_dirs: the work dirs of this script and this state dir, one a line: the
# $(temp_base)/$WORK_PREFIX.* dirs owned by one of server_uids whose marker (a file of
# ours, see verify_work_dir) names this script and, on its state_dir line, this state dir.
# Another state dir's servers are never found: their markers name theirs.
find_work_dirs() {
    local d uid uids first tie
    local -a lines
    uids=" $(server_uids | tr '\n' ' ') "
    for d in "$(temp_base)/$WORK_PREFIX".*; do
        mapfile -t lines < <(marker_tie "$d") || continue
        (( ${#lines[@]} == 2 )) || continue
        first="${lines[0]}" tie="${lines[1]}"
        [[ "$tie" == "$STATE_DIR_REAL" && "$first" == "asyncbench $SCRIPT_NAME "* ]] || continue
        uid="$(stat -c %u -- "$d")" || continue
        [[ "$uids" == *" $uid "* ]] || continue
        verify_work_dir "$d" "${first##* }" "$WORK_PREFIX" "$uid" 2>/dev/null || continue
        echo "$d"
    done
}

# stop_work_dir DIR: stops the servers of the (verified) work dir DIR, found by their data
# directory arguments and owned by DIR's owner, then deletes DIR. When one still runs, it
# is named with the commands that stop it, DIR is kept, and this returns 1.
stop_work_dir() {
    local dir="$1" uid key arg pid start left=0
    uid="$(stat -c %u -- "$dir")"
    for key in "${NODE_KEYS[@]}"; do
        arg="$(node_arg "$dir" "$key")"
        for pid in $(find_server_pids "$uid" "$SERVER_NAMES" "$arg"); do
            start="$(proc_start "$pid")" || continue
            log "stopping pid $pid, found by its data directory $arg"
            stop_verified_pid "$pid" "$start" "$uid" "$SERVER_NAMES" "$arg" "$STOP_TIMEOUT_S" "$STOP_SIGNAL" || true
        done
        for pid in $(find_server_pids "$uid" "$SERVER_NAMES" "$arg"); do
            left=1
            log "still running: pid $pid (uid $uid, $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200))," \
                "the server of $dir; stop it with: kill -KILL $pid; then run: ASYNCBENCH_STATE_DIR=$STATE_DIR $0 stop"
        done
    done
    if (( left )); then
        log "kept $dir: a server still runs from it"
        return 1
    fi
    rm -rf -- "$dir"
    log "deleted $dir"
}

# note_untied_servers: names the servers running from work dirs of this script whose
# marker names no state dir (started before markers did), with how to stop one: stop
# cannot prove that one of them is this state dir's, so it only says so.
note_untied_servers() {
    local d uid key arg pid
    for d in "$(temp_base)/$WORK_PREFIX".*; do
        [[ -d "$d" && ! -L "$d" ]] || continue
        ! marker_tie "$d" >/dev/null || continue
        uid="$(stat -c %u -- "$d")" || continue
        for key in "${NODE_KEYS[@]}"; do
            arg="$(node_arg "$d" "$key")"
            for pid in $(find_server_pids "$uid" "$SERVER_NAMES" "$arg"); do
                log "note: pid $pid (uid $uid) runs a server from $d, whose marker names no state dir" \
                    "(an older $SCRIPT_NAME started it), so this stop cannot tell whether it is this state dir's;" \
                    "if it is: kill -$STOP_SIGNAL $pid, then delete $d"
            done
        done
    done
}

# stop_all [--note-untied]: `stop`, and what `start` does before starting. Stops every server of this
# state dir: the recorded one when its pid is proven (see verify_pid; a pid that is
# another process now, or a decoy, is never signalled), then the servers of the recorded
# work dir and of every work dir find_work_dirs finds, deleting each dir once its servers
# are gone. Returns 0, the state files deleted, when nothing of this state dir runs any
# more and the state file was trustworthy (or missing); 1 otherwise, the state file kept
# for inspection and what was refused or still runs logged.
STOPPED_ANY=0  # set by stop_all: 1 when it signalled a server or deleted a work dir
# shellcheck disable=SC2034  # STOPPED_ANY is read by the scripts' cmd_stop
stop_all() {
    local loaded=0 refused=0 rc=0 dir="" uid key pid start arg w
    local -a dirs=()
    STOPPED_ANY=0
    load_state || loaded=$?
    if (( loaded == 2 )); then
        refused=1
    elif (( loaded == 0 )); then
        dir="${STATE[dir]:-}" uid="${STATE[uid]:-}"
        if [[ ! "$uid" =~ ^[0-9]+$ ]]; then
            log "refusing: the server uid in $STATE_FILE is not a number"
            refused=1
        elif [[ -n "$dir" && ( -e "$dir" || -L "$dir" ) ]] \
            && ! verify_work_dir "$dir" "${STATE[token]:-}" "$WORK_PREFIX" "$uid"; then
            refused=1  # not ours: neither the dir nor a pid said to run from it is touched
        else
            for key in "${NODE_KEYS[@]}"; do
                pid="${STATE[pid$key]:-}" start="${STATE[start$key]:-}"
                pid_alive "$pid" || continue
                arg="$(node_arg "$dir" "$key")"
                if [[ "$(proc_start "$pid" 2>/dev/null)" != "$start" ]]; then
                    log "recorded pid $pid is another process now (not the one started): not signalling it"
                elif verify_pid "$pid" "$start" "$uid" "$SERVER_NAMES" "$arg"; then
                    log "stopping pid $pid"
                    stop_verified_pid "$pid" "$start" "$uid" "$SERVER_NAMES" "$arg" "$STOP_TIMEOUT_S" "$STOP_SIGNAL" || true
                    STOPPED_ANY=1
                else
                    refused=1
                fi
            done
            [[ -n "$dir" && -d "$dir" ]] && dirs+=("$dir")
        fi
    fi
    while IFS= read -r w; do
        [[ "$w" == "${dirs[0]:-}" ]] || dirs+=("$w")
    done < <(find_work_dirs)
    for w in "${dirs[@]}"; do
        stop_work_dir "$w" || rc=1
        STOPPED_ANY=1
    done
    # `stop` (not `start`): with no trustworthy record and nothing found, name the servers
    # this stop cannot tie to any state dir
    if [[ "${1:-}" == --note-untied ]] && (( loaded != 0 || refused )) && (( ${#dirs[@]} == 0 )); then
        note_untied_servers
    fi
    if (( refused )); then
        log "kept $STATE_FILE: it was not trusted; inspect it and delete it by hand"
        return 1
    fi
    (( rc == 0 )) || return 1
    forget_state
}

# server_user SYSTEM_USER: the OS user a server runs as: SYSTEM_USER (a Debian package's
# system user) when we are root, else ourselves.
server_user() {
    if (( EUID == 0 )); then
        id -u "$1" >/dev/null 2>&1 || die "running as root, but there is no '$1' system user to run the server as"
        echo "$1"
    else
        id -un
    fi
}

# run_as CMD...: runs CMD as $SERVER_USER from inside $WORK_DIR; exec, so the pid stays.
# Use in a subshell: ( run_as ... ).
run_as() {
    cd -- "$WORK_DIR" || exit 1
    if (( EUID == 0 )); then
        exec setpriv --reuid="$SERVER_USER" --regid="$SERVER_USER" --init-groups -- "$@"
    fi
    exec "$@"
}

# --- machine and ports ------------------------------------------------------------------

# Memory this process may use, in MiB: MemTotal, or the cgroup limit when lower.
memory_mib() {
    local kb limit mib
    kb="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
    mib=$((kb / 1024))
    for limit in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
        if [[ -r "$limit" ]]; then
            limit="$(cat "$limit")"
            if [[ "$limit" =~ ^[0-9]+$ ]] && (( limit / 1048576 < mib )); then
                mib=$((limit / 1048576))
            fi
            break
        fi
    done
    echo "$mib"
}

# A quarter of memory_mib in 128 MiB steps, at least 128 and at most 16384: the default
# buffer pool (MariaDB) and shared_buffers (PostgreSQL), their vendors' usual advice.
quarter_memory_mib() {
    local mib=$(( $(memory_mib) / 4 / 128 * 128 ))
    (( mib < 128 )) && mib=128
    (( mib > 16384 )) && mib=16384
    echo "$mib"
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, space separated (all held open
# together while they are picked, so they differ from each other).
free_ports() {
    local py
    py="$(command -v python3 || command -v python)" || die "python3 is needed to pick free ports"
    "$py" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# apt_install PKG...: installs Debian packages quietly, showing the log's end on failure.
apt_install() {
    local apt_log
    log "installing $* from the Debian packages"
    apt_log="$(mktemp "$(temp_base)/asyncbench-apt.XXXXXX")"
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -q \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; } >"$apt_log" 2>&1; then
        log "apt-get failed; the end of its output:"
        tail -n 30 "$apt_log" >&2
        rm -f -- "$apt_log"
        return 1
    fi
    rm -f -- "$apt_log"
}

find_bin() {  # first of the names found on PATH or in the sbin dirs
    local name dir
    for name in "$@"; do
        if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
        for dir in /usr/sbin /usr/local/sbin /sbin; do
            if [[ -x "$dir/$name" ]]; then echo "$dir/$name"; return 0; fi
        done
    done
    return 1
}
