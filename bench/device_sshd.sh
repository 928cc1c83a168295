# Sourced by the device scripts: gpudiag from the carried wheels into /tmp/site, and a real OpenSSH sshd on
# 127.0.0.1:2222 (Debian's packages unpacked into a private folder, never into /; see shared/device-ssh.md).
# Leaves: $R (the unpacked OpenSSH), $S (keys, known_hosts, config), SSH (the plain client, as root), SWEEP
# (gpudiag sweep of that node, as root).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${WHL:-.whl}"/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site:$PWD/tests  # gpudiag from its wheel; tests/ for the harness modules

# A real OpenSSH sshd on 127.0.0.1:2222, unpacked into a private folder (never into /).
R=$(mktemp -d); for f in .dev/debs/*.deb; do dpkg -x "$f" "$R"; done
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
id sshd >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin sshd; mkdir -p /run/sshd
S=$(mktemp -d); "$R/usr/bin/ssh-keygen" -q -t ed25519 -N '' -f "$S/host_key"
"$R/usr/bin/ssh-keygen" -q -t ed25519 -N '' -f "$S/client_key"
mkdir -p /root/.ssh && cat "$S/client_key.pub" >> /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
echo "[127.0.0.1]:2222 $(cut -d' ' -f1,2 "$S/host_key.pub")" > "$S/known_hosts"
cat > "$S/sshd_config" <<EOF
Port 2222
ListenAddress 127.0.0.1
HostKey $S/host_key
PermitRootLogin prohibit-password
PasswordAuthentication no
UsePAM no
StrictModes no
PidFile $S/sshd.pid
EOF
"$R/usr/sbin/sshd" -f "$S/sshd_config" -E "$S/sshd.log" || { cat "$S/sshd.log"; exit 1; }
SSH=("$R/usr/bin/ssh" -F /dev/null -p 2222 -i "$S/client_key" -o UserKnownHostsFile="$S/known_hosts"
     -o StrictHostKeyChecking=yes -o BatchMode=yes root@127.0.0.1)

SWEEP=(python3 -m gpudiag sweep 127.0.0.1 -p 2222 -u root --identity-file "$S/client_key" --known-hosts "$S/known_hosts")
