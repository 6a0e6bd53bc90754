#!/bin/sh
# shellcheck disable=SC1091 # the sourced lib
# verify against crafted payloads: each is a real build rewritten with python3's tarfile, its
# MANIFEST.json, SHA256SUMS and .sha256 made to match, so only the check under test can refuse.
. "$(dirname "$0")/../lib.sh"

cd "$T" || exit 1
cat >"$T/craft.py" <<'EOF'
# craft.py SRC DST OP ARG...: rewrites payload SRC into DST (and DST.sha256).
#   adddir NAME        appends a directory entry NAME (mode 0755)
#   mode PATH OCTAL    sets PATH's mode, and the manifest's when PATH is a listed file
#   dup PATH           appends a second copy of file PATH
import hashlib, io, json, os, sys, tarfile
src, dst, op, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with tarfile.open(src, "r:gz") as t:
    entries = [(m, t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()]
data = {m.name: d for m, d in entries}
man = json.loads(data["MANIFEST.json"])
class Raw(tarfile.TarInfo):  # a directory's name as given: tarfile would add a "/"
    def get_info(self):
        i = super().get_info(); i["name"] = self.name; return i
if op == "adddir":
    d = Raw(args[0]); d.type = tarfile.DIRTYPE; d.mode = 0o755; d.mtime = 946684800
    entries.append((d, None))
elif op == "dup":
    entries += [(m, d) for m, d in entries if m.name == args[0]]
elif op == "mode":
    for m, _ in entries:
        if m.name == args[0].rstrip("/"):  # tarfile reads "bin/" as "bin"
            m.mode = int(args[1], 8)
    for f in man["files"]:
        if f["path"] == args[0]:
            f["mode"] = "%04o" % int(args[1], 8)
mj = json.dumps(man, indent="\t").encode() + b"\n"
sums = data["SHA256SUMS"].decode().splitlines(True)
sums[0] = "%s  MANIFEST.json\n" % hashlib.sha256(mj).hexdigest()
new = {"MANIFEST.json": mj, "SHA256SUMS": "".join(sums).encode()}
with tarfile.open(dst, "w:gz", format=tarfile.USTAR_FORMAT) as t:
    for m, d in entries:
        if m.name in new:
            d = new[m.name]; m.size = len(d)
        t.addfile(m, io.BytesIO(d) if d is not None else None)
with open(dst, "rb") as f:
    h = hashlib.sha256(f.read()).hexdigest()
with open(dst + ".sha256", "w") as f:
    f.write("%s  %s\n" % (h, os.path.basename(dst)))
EOF

check_rc "build --target linux-sim" 0 "$LM" build --target linux-sim -o "$T/good.tar.gz"
check_rc "... verifies" 0 "$LM" verify "$T/good.tar.gz"
check_rc "build --target macos" 0 "$LM" build --target macos -o "$T/mac.tar.gz"
check_rc "... verifies" 0 "$LM" verify "$T/mac.tar.gz"
check "a faithful rewrite" python3 "$T/craft.py" "$T/good.tar.gz" "$T/same.tar.gz" mode bin/install.sh 0755
check_rc "... verifies (the crafting changes only what each case asks)" 0 "$LM" verify "$T/same.tar.gz"

# refused NAME PATTERN OP ARG...: a payload crafted with OP ARG... is refused with exit 2 and PATTERN.
crafted=0
refused() {
	name=$1 pat=$2
	shift 2
	crafted=$((crafted + 1))
	if ! python3 "$T/craft.py" "$T/good.tar.gz" "$T/c$crafted.tar.gz" "$@" >"$T/.out" 2>&1; then
		not_ok "$name: crafting failed"; sed 's/^/#   /' "$T/.out"; return
	fi
	check_rc "$name is refused with exit 2" 2 "$LM" verify "$T/c$crafted.tar.gz"
	check_grep "... naming the entry" "$pat" "$T/.out"
}
refused 'an extra directory "bi" (a byte prefix of bin/...)' 'entry "bi" is not in the manifest' adddir bi
refused 'an extra directory "bin/inst"' 'entry "bin/inst" is not in the manifest' adddir bin/inst
refused 'an extra directory "bi/"' 'entry "bi/" is not in the manifest' adddir bi/
refused 'an extra empty directory "lib/x/"' 'entry "lib/x/" is not in the manifest' adddir lib/x/
refused 'a 0777 directory' 'entry "bin/" has mode 0777 \(world-writable\)' mode bin/ 0777
refused 'a sticky directory' 'entry "lib/" has mode 1755 \(sticky\)' mode lib/ 01755
refused 'a setuid file the manifest lists as setuid' 'entry "bin/install.sh" has mode 4755 \(setuid\)' mode bin/install.sh 04755
refused 'a setgid file' 'entry "bin/status.sh" has mode 2755 \(setgid\)' mode bin/status.sh 02755
refused 'a world-writable file' 'entry "payload.env" has mode 0666 \(world-writable\)' mode payload.env 0666
refused 'a file given twice' 'entry "bin/install.sh" appears twice' dup bin/install.sh
refused 'MANIFEST.json given twice' 'entry "MANIFEST.json" appears twice' dup MANIFEST.json
# Without its checksum file: FILE.sha256 named once, the payload named once (the message was
# formatted into its own buffer, undefined behaviour that printed the payload's path twice).
"$LM" build --target linux-sim -o "$T/nosum.tar.gz" >/dev/null 2>&1 && rm -f "$T/nosum.tar.gz.sha256"
check_rc "verify without its checksum file: exit 2" 2 "$LM" verify "$T/nosum.tar.gz"
check_has "... naming FILE.sha256" "$T/nosum.tar.gz: cannot read its checksum file: $T/nosum.tar.gz.sha256: No such file" "$T/.out"
check "... the payload named once" test "$(grep -o 'cannot read its checksum file' "$T/.out" | wc -l)" -eq 1

# libarchive is loaded the first time a payload is written or read (core/archive_lazy.h): one that
# cannot be loaded fails verify and build, naming it, and leaves a command without payloads as it was.
check_rc "verify where libarchive cannot be loaded (LUME_METAL_LIBARCHIVE): exit 1" 1 \
	env LUME_METAL_LIBARCHIVE="$T/none/libarchive.so.13" "$LM" verify "$T/good.tar.gz"
check_has "... naming the library" "lume-metal: cannot load libarchive: $T/none/libarchive.so.13: cannot open shared object file" "$T/.out"
check_rc "... build too: exit 1" 1 env LUME_METAL_LIBARCHIVE="$T/none/libarchive.so.13" "$LM" build -o "$T/none.tar.gz"
check "... writing no payload" test ! -e "$T/none.tar.gz" -a ! -e "$T/none.tar.gz.sha256"
check_rc "... a library without libarchive's functions: exit 1" 1 env LUME_METAL_LIBARCHIVE=libz.so.1 "$LM" verify "$T/good.tar.gz"
check_has "... naming the function it lacks" "lume-metal: cannot load libarchive (libz.so.1): it has no archive_entry_filetype" "$T/.out"
check_rc "... and a command without payloads runs as ever" 0 env LUME_METAL_LIBARCHIVE="$T/none/libarchive.so.13" \
	"$LM" ledger show --state "$T/state"
t_done
