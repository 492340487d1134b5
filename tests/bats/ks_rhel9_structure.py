#!/usr/bin/env python3
"""Structural check of a rendered kickstart against RHEL 9 kickstart syntax.

NOT the upstream validator (pykickstart's ksvalidator, which the t4100 test
runs when it is installed): a small, strict check of what nodeforge emits,
written from the RHEL 9 kickstart reference ("Performing an advanced RHEL 9
installation", appendix "Kickstart commands and options reference") and
pykickstart's RHEL9 handler.

  ks_rhel9_structure.py KS --tree TREE --server-url URL --args "ROLE ARGS"
                        [--secret FILE]...

Checks: every line outside a section is a RHEL 9 command that is neither
removed nor deprecated, with options that command takes (for the commands
nodeforge's templates use); sections are known and each is closed by %end;
quoting is balanced; one-shot commands appear once; the commands an
unattended install needs are present; liveimg has --url (an http(s) URL
with a suffix Anaconda takes for a tarball) and a 64-hex --checksum equal
to the sha256 of the file the URL names in TREE; bootloader --append holds
the role's arguments and nodeforge.server=; network uses DHCP on a named
device and activates it; %post enables the gate; no secret in clear (root
password or hash, private keys, the --secret files' bytes).
Exit 0 when clean, 1 with one line per problem.
"""
import argparse
import base64
import hashlib
import os
import re
import shlex
import sys

# pykickstart's RHEL9 handler, less what RHEL 9 removed (autostep, device,
# deviceprobe, dmraid, install, multipath) and what it deprecates or only
# keeps for compatibility (auth, authconfig, method, nvdimm, syspurpose).
RHEL9_COMMANDS = {
    "authselect", "autopart", "bootloader", "btrfs", "cdrom", "clearpart",
    "cmdline", "driverdisk", "module", "eula", "fcoe", "firewall",
    "firstboot", "graphical", "group", "halt", "harddrive", "hmc",
    "ignoredisk", "iscsi", "iscsiname", "keyboard", "lang", "liveimg",
    "logging", "logvol", "mediacheck", "mount", "network", "nfs",
    "timesource", "ostreesetup", "part", "partition", "poweroff", "raid",
    "realm", "reboot", "repo", "reqpart", "rescue", "rhsm", "rootpw",
    "selinux", "services", "shutdown", "skipx", "snapshot", "sshpw",
    "sshkey", "text", "timezone", "updates", "url", "user", "vnc",
    "volgroup", "xconfig", "zerombr", "zfcp", "zipl",
}
REMOVED_OR_DEPRECATED = {
    "install": "removed in RHEL 9 (name the source: url, cdrom, liveimg, ...)",
    "device": "removed in RHEL 9", "deviceprobe": "removed in RHEL 9",
    "dmraid": "removed in RHEL 9", "multipath": "removed in RHEL 9",
    "autostep": "removed in RHEL 9",
    "auth": "deprecated since RHEL 8 (authconfig is gone): use authselect",
    "authconfig": "deprecated since RHEL 8 (authconfig is gone): use authselect",
    "method": "not a RHEL 9 command: name the source directly",
    "nvdimm": "deprecated in RHEL 9", "syspurpose": "deprecated in RHEL 9",
    "pwpolicy": "deprecated in RHEL 9", "upgrade": "removed long ago",
    "interactive": "removed long ago", "key": "removed long ago",
}
# Options per command, for the commands nodeforge's templates use.  A
# trailing '=' marks an option that takes a value.
OPTIONS = {
    "text": {"--non-interactive"},
    "cmdline": set(),
    "reboot": {"--eject", "--kexec"},
    "poweroff": {"--eject", "--kexec"},
    "lang": {"--addsupport="},
    "keyboard": {"--vckeymap=", "--xlayouts=", "--switch="},
    "timezone": {"--utc", "--isUtc"},
    "timesource": {"--ntp-server=", "--ntp-pool=", "--nts", "--ntp-disable"},
    "network": {"--bootproto=", "--device=", "--ip=", "--ipv6=", "--gateway=",
                "--ipv6gateway=", "--nameserver=", "--netmask=", "--hostname=",
                "--ethtool=", "--onboot=", "--dhcpclass=", "--mtu=",
                "--noipv4", "--noipv6", "--activate", "--no-activate",
                "--nodefroute", "--nodns", "--interfacename=", "--bondslaves=",
                "--bondopts=", "--vlanid=", "--teamslaves=", "--teamconfig=",
                "--bridgeslaves=", "--bridgeopts=", "--bindto="},
    "rootpw": {"--iscrypted", "--plaintext", "--lock", "--allow-ssh"},
    "selinux": {"--enforcing", "--permissive", "--disabled"},
    "firstboot": {"--enable", "--enabled", "--disable", "--disabled",
                  "--reconfig"},
    "zerombr": set(),
    "skipx": set(),
    "clearpart": {"--all", "--drives=", "--list=", "--linux", "--none",
                  "--initlabel", "--disklabel=", "--cdl"},
    "reqpart": {"--add-boot"},
    "part": {"--size=", "--grow", "--maxsize=", "--noformat", "--onpart=",
             "--usepart=", "--ondisk=", "--ondrive=", "--asprimary",
             "--fsprofile=", "--mkfsoptions=", "--fstype=", "--fsoptions=",
             "--label=", "--recommended", "--onbiosdisk=", "--encrypted",
             "--luks-version=", "--passphrase=", "--cipher=", "--escrowcert=",
             "--backuppassphrase=", "--pbkdf=", "--pbkdf-memory=",
             "--pbkdf-time=", "--pbkdf-iterations=", "--resize",
             "--hibernation"},
    "liveimg": {"--url=", "--proxy=", "--noverifyssl", "--checksum="},
    "bootloader": {"--append=", "--boot-drive=", "--driveorder=",
                   "--leavebootorder", "--location=", "--password=",
                   "--iscrypted", "--timeout=", "--disabled", "--nombr",
                   "--extlinux"},
    "services": {"--enabled=", "--disabled="},
}
OPTIONS["partition"] = OPTIONS["part"]
ONCE = {"text", "cmdline", "graphical", "reboot", "poweroff", "halt",
        "shutdown", "lang", "keyboard", "timezone", "rootpw", "selinux",
        "firstboot", "zerombr", "clearpart", "reqpart", "liveimg",
        "bootloader", "url", "cdrom", "autopart", "skipx"}
REQUIRED = {"lang", "keyboard", "timezone", "rootpw", "liveimg", "bootloader"}
SECTIONS = {
    "%pre": {"--interpreter=", "--erroronfail", "--log="},
    "%pre-install": {"--interpreter=", "--erroronfail", "--log="},
    "%post": {"--nochroot", "--interpreter=", "--erroronfail", "--log="},
    "%onerror": {"--interpreter=", "--log="},
    "%packages": {"--default", "--excludedocs", "--ignoremissing",
                  "--inst-langs=", "--multilib", "--exclude-weakdeps",
                  "--retries=", "--timeout=", "--nocore"},
}
ANACONDA_TAR = (".tar", ".tbz", ".tgz", ".txz", ".tar.bz2", ".tar.gz", ".tar.xz")
CRYPT_HASH = re.compile(r"\$(1|2[aby]|5|6|7|y|gy)\$[./A-Za-z0-9]")
B64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


def parse_opts(words, allowed, where, problems):
    """--opt=value / --opt value / --flag / positional -> (dict, positional)"""
    opts, pos, i = {}, [], 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            name, eq, val = w.partition("=")
            takes = allowed is not None and name + "=" in allowed
            if allowed is not None and name not in allowed and not takes:
                problems.append(f"{where}: option '{name}' is not a RHEL 9 option here")
            if takes and not eq:
                if i + 1 >= len(words):
                    problems.append(f"{where}: '{name}' needs a value")
                    val = ""
                else:
                    i += 1
                    val = words[i]
            elif eq and allowed is not None and not takes:
                problems.append(f"{where}: '{name}' takes no value")
            if name in opts:
                problems.append(f"{where}: '{name}' given twice")
            opts[name] = val if (eq or takes) else True
        else:
            pos.append(w)
        i += 1
    return opts, pos


def check(path, tree, server_url, role_args, secrets):
    problems = []
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    seen = {}
    section = None
    post_body = []
    sections = 0
    for no, raw in enumerate(lines, 1):
        where = f"{path}:{no}"
        line = raw.strip()
        if section:
            if line == "%end":
                section = None
            elif line.startswith("%") and line.split()[0] in SECTIONS:
                problems.append(f"{where}: '{line.split()[0]}' opens before "
                                f"'{section}' is closed with %end")
            elif section == "%post":
                post_body.append(line)
            continue
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            problems.append(f"{where}: unbalanced quoting ({e}): {line}")
            continue
        if not words:
            continue
        cmd = words[0]
        if cmd.startswith("%"):
            if cmd == "%end":
                problems.append(f"{where}: '%end' without an open section")
            elif cmd not in SECTIONS:
                problems.append(f"{where}: '{cmd}' is not a RHEL 9 section "
                                "nodeforge may emit")
            else:
                parse_opts(words[1:], SECTIONS[cmd], where, problems)
                section = cmd
                sections += 1
            continue
        if cmd in REMOVED_OR_DEPRECATED:
            problems.append(f"{where}: '{cmd}' is {REMOVED_OR_DEPRECATED[cmd]}")
            continue
        if cmd not in RHEL9_COMMANDS:
            problems.append(f"{where}: '{cmd}' is not a RHEL 9 kickstart command")
            continue
        if cmd in ONCE and cmd in seen:
            problems.append(f"{where}: '{cmd}' may appear once (also line "
                            f"{seen[cmd][0]})")
        opts, pos = parse_opts(words[1:], OPTIONS.get(cmd), where, problems)
        seen.setdefault(cmd, (no, opts, pos))
        if cmd == "rootpw":
            if pos or "--iscrypted" in opts or "--plaintext" in opts:
                problems.append(f"{where}: a root password in the kickstart "
                                "(only 'rootpw --lock' is allowed)")
            if "--lock" not in opts:
                problems.append(f"{where}: rootpw without --lock")
        if cmd in ("user", "sshpw") or (cmd == "bootloader" and "--password" in opts):
            problems.append(f"{where}: a password in the kickstart")
        if cmd == "logging" and "--level" in opts:
            problems.append(f"{where}: 'logging --level' is deprecated in RHEL 9")
        if cmd == "timezone" and ("--ntpservers" in opts or "--nontp" in opts):
            problems.append(f"{where}: timezone --ntpservers/--nontp are "
                            "deprecated in RHEL 9: use timesource")
    if section:
        problems.append(f"{path}: section '{section}' is not closed with %end")

    for cmd in sorted(REQUIRED - set(seen)):
        problems.append(f"{path}: no '{cmd}' command")
    if not ({"part", "partition", "autopart", "logvol", "raid", "btrfs"} & set(seen)):
        problems.append(f"{path}: no partitioning command")

    if "liveimg" in seen:
        no, opts, pos = seen["liveimg"]
        where = f"{path}:{no}"
        url, sha = opts.get("--url"), opts.get("--checksum")
        if pos:
            problems.append(f"{where}: liveimg takes no positional argument")
        if not isinstance(url, str) or not re.match(r"https?://", url):
            problems.append(f"{where}: liveimg needs --url=http(s)://...")
        elif not url.endswith(ANACONDA_TAR):
            problems.append(f"{where}: Anaconda takes '{url}' for a disk image, "
                            "not a tarball (suffix not one of "
                            f"{', '.join(ANACONDA_TAR)})")
        elif not url.startswith(server_url + "/"):
            problems.append(f"{where}: liveimg URL '{url}' is not under {server_url}")
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            problems.append(f"{where}: liveimg needs --checksum=<64 hex digits>")
        elif isinstance(url, str) and url.startswith(server_url + "/"):
            served = os.path.join(tree, url[len(server_url) + 1:])
            if ".." in url or not os.path.isfile(served):
                problems.append(f"{where}: the URL names no file of the tree "
                                f"('{served}')")
            else:
                h = hashlib.sha256(open(served, "rb").read()).hexdigest()
                if h != sha:
                    problems.append(f"{where}: --checksum {sha} is not the "
                                    f"sha256 of '{served}' ({h})")

    if "bootloader" in seen:
        no, opts, _ = seen["bootloader"]
        where = f"{path}:{no}"
        append = opts.get("--append")
        if not isinstance(append, str):
            problems.append(f"{where}: bootloader has no --append")
        else:
            toks = append.split()
            for a in role_args.split():
                if a not in toks:
                    problems.append(f"{where}: --append lacks the role's '{a}'")
            if f"nodeforge.server={server_url}" not in toks:
                problems.append(f"{where}: --append lacks nodeforge.server={server_url}")
        if opts.get("--location", "mbr") not in ("mbr", "partition", "none", "boot"):
            problems.append(f"{where}: bootloader --location must be mbr, "
                            "partition, none or boot")

    if "network" in seen:
        no, opts, _ = seen["network"]
        where = f"{path}:{no}"
        if opts.get("--bootproto") != "dhcp":
            problems.append(f"{where}: network must use --bootproto=dhcp")
        if not opts.get("--device"):
            problems.append(f"{where}: network needs --device (e.g. link)")
        if "--activate" not in opts:
            problems.append(f"{where}: network needs --activate")
        if opts.get("--onboot", "yes") not in ("yes", "no", "on", "off", "true",
                                               "false", "1", "0"):
            problems.append(f"{where}: network --onboot takes yes or no")
    else:
        problems.append(f"{path}: no 'network' command")

    if "selinux" in seen and len(seen["selinux"][1]) != 1:
        problems.append(f"{path}:{seen['selinux'][0]}: selinux takes exactly one mode")

    if not any(re.fullmatch(r"systemctl enable nodeforge-verify\.service", l)
               for l in post_body):
        problems.append(f"{path}: %post does not enable nodeforge-verify.service")

    # secrets in clear
    for no, raw in enumerate(lines, 1):
        if CRYPT_HASH.search(raw):
            problems.append(f"{path}:{no}: a crypt(3) password hash")
        if "PRIVATE KEY" in raw:
            problems.append(f"{path}:{no}: a private key")
        for m in B64_RUN.finditer(raw):
            if not re.fullmatch(r"[0-9a-f]+", m.group(0)):
                problems.append(f"{path}:{no}: a base64 blob (a key?): "
                                f"{m.group(0)[:16]}...")
    for s in secrets:
        data = open(s, "rb").read()
        forms = [base64.b64encode(data).decode(), data.hex()]
        try:
            forms.append(data.decode("utf-8").strip())
        except UnicodeDecodeError:
            pass
        if any(f and f in text for f in forms):
            problems.append(f"{path}: holds the secret of '{s}'")
    return problems, len(seen), sections


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ks", nargs="+")
    ap.add_argument("--tree", required=True)
    ap.add_argument("--server-url", required=True)
    ap.add_argument("--args", default="", help="the role's kernel arguments")
    ap.add_argument("--secret", action="append", default=[])
    a = ap.parse_args()
    bad = 0
    for ks in a.ks:
        problems, ncmd, nsec = check(ks, a.tree, a.server_url, a.args, a.secret)
        for p in problems:
            print(p)
        bad += len(problems)
        if not problems:
            print(f"{ks}: ok ({ncmd} commands, {nsec} sections)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
