# lume-metal: host tool (plugin/), guest shim and probe (shim/), tests (tests/).
VERSION  := 0.1.0
PKGS     := libssh2 libcjson libarchive libcrypto libcurl sqlite3
CC       ?= cc
# Where `make install` puts things (DESTDIR is prepended, e.g. for a package); the binary has
# PKGDATADIR compiled in (LM_PKGDATADIR) as the second place it looks for its data, after
# $LUME_METAL_DATADIR and before the source tree (LM_DATADIR, which tests/unit use too).
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
PKGDATADIR  ?= $(DATADIR)/lume-metal
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
INSTALL     ?= install
# The commit --version names ("unknown" outside git; a package build may pass COMMIT=...).
COMMIT      ?= $(or $(shell git -C '$(CURDIR)' rev-parse HEAD 2>/dev/null),unknown)
WARN     := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
DEFS     := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DLM_VERSION='"$(VERSION)"' \
            -DLM_DATADIR='"$(CURDIR)"' -DLM_PKGDATADIR='"$(PKGDATADIR)"' -DLM_COMMIT='"$(COMMIT)"'
# Homebrew's libarchive, openssl@3 and curl are keg-only: pkg-config finds them only through
# their own prefix. Passed on the command line, since $(shell) does not see exported variables
# before GNU make 4.4 (macOS has 3.81). sqlite3 is macOS's own: Homebrew's pkg-config has its .pc.
PKG_CONFIG ?= pkg-config
BREW_KEGS  := libarchive openssl@3 curl
UNAME      := $(shell uname -s)
ifeq ($(UNAME),Darwin)
BREW_PREFIX := $(shell brew --prefix 2>/dev/null)
BREW_EMPTY  :=
BREW_PCPATH := $(subst $(BREW_EMPTY) $(BREW_EMPTY),:,$(foreach k,$(BREW_KEGS),$(BREW_PREFIX)/opt/$(k)/lib/pkgconfig))
PKG_CONFIG  := PKG_CONFIG_PATH='$(BREW_PCPATH)$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))' $(PKG_CONFIG)
endif
# A package pkg-config cannot find stops make here, named, instead of a compile without its
# flags ending in hundreds of undefined references. Expanded only in recipes that compile, and
# then once a make, not once an object: $(call once,NAME,VALUE) computes VALUE on NAME's first
# use and makes NAME a simple variable holding it.
once        = $(eval $(1) := $(2))$($(1))
PKG_MISSING = $(strip $(foreach p,$(PKGS),$(if $(shell $(PKG_CONFIG) --exists '$(p)' && echo y),,$(p))))
PKG_CHECK   = $(if $(PKG_MISSING),$(error pkg-config cannot find $(PKG_MISSING): install it \
              (make deps), or point PKG_CONFIG_PATH at its .pc file))
# libcurl and libarchive are not linked: net/curl_lazy.c loads libcurl (dlopen) the first time a
# registry is spoken to, core/archive_lazy.c libarchive the first time a payload is written or
# read, from the file pkg-config names (its libdir, the name of the library's ABI), compiled in as
# LM_CURL_LIB and LM_ARCHIVE_LIB. dlopen is libc's on glibc 2.34 and later (-ldl where needed).
, := ,
PKG_CFLAGS = $(call once,PKG_CFLAGS,$(PKG_CHECK)$(shell $(PKG_CONFIG) --cflags $(PKGS)) \
             -DLM_CURL_LIB='"$(CURL_LIB)"' -DLM_ARCHIVE_LIB='"$(ARCHIVE_LIB)"')
PKG_LIBS   = $(call once,PKG_LIBS,$(shell $(PKG_CONFIG) --libs $(filter-out $(LAZY_PKGS),$(PKGS))) -pthread -lm $(LIBDL))
LAZY_PKGS  := libcurl libarchive
CURL_LIB   = $(call once,CURL_LIB,$(shell $(PKG_CONFIG) --variable=libdir libcurl)/$(if $(filter Darwin,$(UNAME)),libcurl.4.dylib,libcurl.so.4))
ARCHIVE_LIB = $(call once,ARCHIVE_LIB,$(shell $(PKG_CONFIG) --variable=libdir libarchive)/$(if $(filter Darwin,$(UNAME)),libarchive.13.dylib,libarchive.so.13))
# test_payload makes archives of its own with libarchive: it links it.
ARCHIVE_LIBS = $(call once,ARCHIVE_LIBS,$(shell $(PKG_CONFIG) --libs libarchive))
LIBDL      := $(if $(filter Linux,$(UNAME)),-Wl$(,)--as-needed -ldl)
CFLAGS   ?= -O2 -g
# The sanitized tree the tests run is compiled at -O0 and linked with gold where the compiler
# can use it (elsewhere, the default linker): `make -j2 test-build` after `make demo` takes 54 s
# of CPU (28 s) here instead of 70 s (35 s) at -O1 with bfd, the unit tests' 26 links 2 s
# instead of 6. The tests that run this tree (the unit tests; the shell tests of faults, kills
# and hostile input) took 98 s of CPU against 95 s at -O1, one at a time. The fuzzing harnesses
# (clang, make fuzz) keep -O1, where a run's speed is its coverage.
SAN_OPT  ?= -O0
SAN_FLAGS = -g -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN      := $(SAN_OPT) $(SAN_FLAGS)
SAN_LD   = $(call once,SAN_LD,$(if $(filter Linux,$(UNAME)),$(if $(shell $(CC) -fuse-ld=gold -Wl$(,)--version 2>/dev/null | grep -i gold),-fuse-ld=gold)))
# (Linux only: Apple's clang has no static ASan runtime.)
SAN_STATIC := $(if $(filter Linux,$(UNAME)),$(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),-static-libsan,-static-libasan -static-libubsan))

# plugin/ in floors, each using only its own and the ones below (tests/install/t-layers.sh):
# cmd/ (main, the CLI, one cmd_<name>.c per subcommand) over ops/ (the per-VM operations and
# the fleet engine) over net/ (ssh, the guest, Lume, the registry, the Mac) over core/ (data:
# payload, manifests, ledger, config). Includes name the floor: "core/ledger.h".
LAYERS   := cmd ops net core
LIB_SRC  := $(wildcard plugin/ops/*.c plugin/net/*.c plugin/core/*.c)
CMD_SRC  := $(wildcard plugin/cmd/*.c)
# The guest scripts (guest-scripts/*.sh) are compiled in: net/rcmd.c includes them as
# build/gen/net/rscripts.h (scripts/embed-scripts), a header like the others for every rule.
GEN_HDR  := build/gen/net/rscripts.h
HDRS     := $(foreach l,$(LAYERS),$(wildcard plugin/$(l)/*.h)) $(GEN_HDR)
INCS     := -Iplugin -Ibuild/gen
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRC))

.PHONY: all deps deps-demo deps-test test test-build demo clean lint install uninstall deb FORCE
all: plugin/lume-metal shim

deps:
	sh scripts/deps.sh
deps-demo:
	sh scripts/deps.sh demo
deps-test:
	sh scripts/deps.sh test

$(GEN_HDR): scripts/embed-scripts $(wildcard guest-scripts/*.sh)
	@mkdir -p $(@D)
	sh scripts/embed-scripts $@ $(wildcard guest-scripts/*.sh)

# The tool: one object a source (build/obj/), so an edit, or a new PREFIX or commit
# (build/build-id), compiles only the sources it touches, and make -j compiles them at once.
# CFLAGS goes to the link too (a package's LDFLAGS ride in it: debian/rules).
OBJ_LIB := $(patsubst plugin/%.c,build/obj/%.o,$(LIB_SRC))
OBJ_CMD := $(patsubst plugin/%.c,build/obj/%.o,$(CMD_SRC))

build/obj/%.o: plugin/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(PKG_CFLAGS) $(INCS) -c -o $@ $<

plugin/lume-metal: $(OBJ_LIB) $(OBJ_CMD)
	$(CC) $(CFLAGS) -o $@ $^ $(PKG_LIBS)

# What the binary has compiled in besides its sources: rewritten when it changes, so a new
# commit or PREFIX rebuilds what uses it (LM_COMMIT, LM_PKGDATADIR, LM_DATADIR).
build/build-id: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(COMMIT) $(PKGDATADIR) $(CURDIR)' ] || echo '$(COMMIT) $(PKGDATADIR) $(CURDIR)' >$@
build/obj/cmd/cli_version.o build/obj/core/datadir.o build/asan/obj/cmd/cli_version.o build/asan/obj/core/datadir.o: build/build-id

# The same tool under ASan and UBSan, used by the shell tests, and the unit tests: each source
# is compiled once under the sanitizers (build/asan/obj/) and linked into each binary that
# uses it (the unit tests through an archive, below).
ASAN_LIB := $(patsubst plugin/%.c,build/asan/obj/%.o,$(LIB_SRC))
ASAN_CMD := $(patsubst plugin/%.c,build/asan/obj/%.o,$(CMD_SRC))

build/asan/obj/%.o: plugin/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) $(PKG_CFLAGS) $(INCS) -c -o $@ $<

# The tool's ASan build carries the sanitizers' runtimes (-static-lib*): a start with
# LeakSanitizer on costs 75 ms of CPU instead of 90 here (scripts/bench-procs), and the tests start
# it thousands of times. (The unit tests and the shim's harness keep the shared runtimes.)
build/asan/lume-metal: $(ASAN_LIB) $(ASAN_CMD)
	$(CC) $(SAN) $(SAN_LD) $(SAN_STATIC) -o $@ $^ $(PKG_LIBS)

# The unit tests link the library's ASan objects as an archive, so the linker takes only the
# objects a test needs (and what those need): the 26 links cost a quarter less CPU than with
# every object (6.4 s instead of 8.6 here; test_util's 0.24 s instead of 0.39). Nothing in the
# library relies on being linked whole (no constructors, no weak symbols). The archive is made
# afresh, so no object of a removed source stays in it; ar names a member by its file name
# alone, so two objects of one name (in two floors) stop make rather than one silently
# replacing the other.
ASAN_AR := build/asan/liblm.a
dup_names = $(sort $(foreach n,$(1),$(if $(word 2,$(filter $(n),$(1))),$(n))))
$(ASAN_AR): $(ASAN_LIB)
	$(if $(call dup_names,$(notdir $^)),$(error $@: more than one object named $(call dup_names,$(notdir $^))))
	rm -f $@
	$(AR) rcs $@ $^

build/tests/%: tests/unit/%.c tests/unit/unit.h $(ASAN_AR) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) $(SAN_LD) $(PKG_CFLAGS) $(INCS) -o $@ $< $(ASAN_AR) $(PKG_LIBS) $(UNIT_LIBS)
build/tests/test_payload: UNIT_LIBS = $(ARCHIVE_LIBS)

# test_cli compiles cli.c in (it is not in the library).
build/tests/test_cli: plugin/cmd/cli.c plugin/cmd/cli_term.c plugin/cmd/cli_format.c

build/bench/bench-upload: scripts/bench/bench_upload.c $(LIB_SRC) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(PKG_CFLAGS) $(INCS) -o $@ $< $(LIB_SRC) $(PKG_LIBS)

# The delay proxy bench-fleet --rtt puts between the controller and the guests (no netem).
build/netdelay: scripts/bench-fleet.d/netdelay.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -o $@ $<

# bench-fleet's CPU account of the simulated guest commands (scripts/bench-fleet.d/simcpu.c).
build/simcpu: scripts/bench-fleet.d/simcpu.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -o $@ $<

-include shim/shim.mk

# lint: shellcheck, one target a group of files, so make -j checks them at once.
.PHONY: lint-payload lint-scripts lint-tests lint-install lint-bash
lint: lint-payload lint-scripts lint-tests lint-install lint-bash
lint-payload:
	shellcheck -s sh -x guest-payload/*.sh
lint-scripts:
	shellcheck -s sh guest-payload/run-with-shim guest-scripts/*.sh scripts/embed-scripts \
	    scripts/deps.sh scripts/demo scripts/bench-upload scripts/bench-deploy scripts/bench-ledger scripts/bench-procs scripts/lume-preprovision \
	    scripts/mac-first-run scripts/guest-procs \
	    scripts/bench-fleet scripts/bench-fleet.d/*.sh scripts/fleet-rollback scripts/ansible/inventory
lint-tests:
	shellcheck -s sh tests/guest-sim/bin/* tests/shim/*.sh tests/guest/*.sh tests/guest/standin/* tests/deploy/*.sh \
	    tests/sshd.sh tests/guest-sim/stop-jobs.sh tests/registry.sh tests/pidfile.sh tests/lume-sim/* tests/cli/*.sh tests/lib.sh tests/run.sh \
	    tests/outputs/*.sh
lint-install:
	shellcheck -s sh tests/install/*.sh tests/bench/*.sh
lint-bash:
	shellcheck -s bash completions/lume-metal.bash

# What the tests need is built with one job per core; then the tests run.
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
test: deps-test
	$(MAKE) -j$(JOBS) test-build
	sh tests/run.sh

# (lint first: its shellcheck runs beside the compiles rather than after them.)
test-build: lint all build/asan/lume-metal build/netdelay build/simcpu $(UNIT_BIN) shim-test-build

# The demo deploys the linux-sim payload: the tool, and the Linux shim, probe and simulated
# device (GCC's libobjc); not the Mach-O cross-build (zig).
demo: deps-demo plugin/lume-metal build/linux/libMetal.so build/linux/liblumemetal.so build/linux/lume-metal-probe \
      $(SIM_WORKLOAD)
	sh scripts/demo

# make install PREFIX=/usr/local DESTDIR=: the binary; its data folder PKGDATADIR (guest
# scripts, manifests and schemas, and the prebuilt macOS shim and probe under build/macos/,
# the layout payload.c reads in the source tree); lume-preprovision and fleet-rollback, which
# run BINDIR/lume-metal; the man page; bash, zsh and fish completions. The shim and probe must
# be built first (make shim: clang on macOS, zig on Linux).
MAC_FILES := build/macos/liblumemetal.dylib build/macos/lume-metal-probe
INST_SCRIPTS := lume-preprovision fleet-rollback
install: plugin/lume-metal
	@for f in $(MAC_FILES); do [ -f "$$f" ] || { echo "make install: $$f is missing: run make shim first (zig on Linux, clang on macOS)" >&2; exit 1; }; done
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(BASHCOMPDIR)' \
	    '$(DESTDIR)$(ZSHCOMPDIR)' '$(DESTDIR)$(FISHCOMPDIR)' '$(DESTDIR)$(PKGDATADIR)/guest-payload' \
	    '$(DESTDIR)$(PKGDATADIR)/manifests/profiles' '$(DESTDIR)$(PKGDATADIR)/manifests/workloads' \
	    '$(DESTDIR)$(PKGDATADIR)/manifests/schema' '$(DESTDIR)$(PKGDATADIR)/build/macos'
	$(INSTALL) -m 755 plugin/lume-metal '$(DESTDIR)$(BINDIR)/lume-metal'
	@for s in $(INST_SCRIPTS); do \
	    sed 's|^lm=$${LUME_METAL:-}$$|lm=$${LUME_METAL:-$(BINDIR)/lume-metal}|' scripts/$$s >build/$$s.installed && \
	    grep -q '^lm=$${LUME_METAL:-$(BINDIR)/lume-metal}$$' build/$$s.installed || \
	    { echo "make install: scripts/$$s: no 'lm=\$${LUME_METAL:-}' line to point at $(BINDIR)/lume-metal" >&2; exit 1; }; \
	    echo $(INSTALL) -m 755 build/$$s.installed '$(DESTDIR)$(BINDIR)/'$$s; \
	    $(INSTALL) -m 755 build/$$s.installed '$(DESTDIR)$(BINDIR)/'$$s || exit 1; done
	$(INSTALL) -m 644 guest-payload/* '$(DESTDIR)$(PKGDATADIR)/guest-payload/'
	$(INSTALL) -m 644 manifests/hosts.example.json '$(DESTDIR)$(PKGDATADIR)/manifests/'
	$(INSTALL) -m 644 manifests/profiles/*.json '$(DESTDIR)$(PKGDATADIR)/manifests/profiles/'
	$(INSTALL) -m 644 manifests/workloads/*.json '$(DESTDIR)$(PKGDATADIR)/manifests/workloads/'
	$(INSTALL) -m 644 manifests/schema/*.json '$(DESTDIR)$(PKGDATADIR)/manifests/schema/'
	$(INSTALL) -m 755 $(MAC_FILES) '$(DESTDIR)$(PKGDATADIR)/build/macos/'
	$(INSTALL) -m 644 man/lume-metal.1 '$(DESTDIR)$(MANDIR)/man1/lume-metal.1'
	$(INSTALL) -m 644 completions/lume-metal.bash '$(DESTDIR)$(BASHCOMPDIR)/lume-metal'
	$(INSTALL) -m 644 completions/_lume-metal '$(DESTDIR)$(ZSHCOMPDIR)/_lume-metal'
	$(INSTALL) -m 644 completions/lume-metal.fish '$(DESTDIR)$(FISHCOMPDIR)/lume-metal.fish'

# make deb [DEBDIR=build/deb]: the .deb for Linux controllers, from a copy of the tree in
# DEBDIR/src (dpkg-buildpackage writes beside the tree it builds) with the macOS shim and probe
# built here first (zig); debian/rules installs them (make install), nothing else is rebuilt.
DEBDIR ?= build/deb
DEB_TREE := Makefile README.md plugin guest-payload guest-scripts manifests scripts shim man completions docs debian
deb: $(MAC_FILES)
	rm -rf '$(DEBDIR)/src' && mkdir -p '$(DEBDIR)/src/build'
	tar -cf - $(DEB_TREE) | tar -C '$(DEBDIR)/src' -xf -
	cp -R build/macos '$(DEBDIR)/src/build/'
	cd '$(DEBDIR)/src' && COMMIT='$(COMMIT)' DEB_BUILD_OPTIONS='nocheck $(DEB_BUILD_OPTIONS)' \
	    dpkg-buildpackage -b -uc -us
	@ls '$(DEBDIR)'/lume-metal_*.deb

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/lume-metal' $(foreach s,$(INST_SCRIPTS),'$(DESTDIR)$(BINDIR)/$(s)') \
	    '$(DESTDIR)$(MANDIR)/man1/lume-metal.1' '$(DESTDIR)$(BASHCOMPDIR)/lume-metal' \
	    '$(DESTDIR)$(ZSHCOMPDIR)/_lume-metal' '$(DESTDIR)$(FISHCOMPDIR)/lume-metal.fish'
	rm -rf '$(DESTDIR)$(PKGDATADIR)'

clean:
	rm -rf build plugin/lume-metal $(SHIM_CLEAN)

# Fuzzing (tests/fuzz/README.md): one libFuzzer harness per parser, built with clang into
# build/fuzz/fuzz-NAME; `make fuzz` runs each for FUZZ_SECONDS. Every harness links
# tests/fuzz/stub_ssh.c in place of plugin/net/ssh.c and its parts (ssh_*.c). `make test` runs
# build/fuzz/regress, all the harnesses under $(CC) with ASan and UBSan, over their corpora
# (tests/fuzz/t-regress.sh).
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 300
FUZZ_CC      ?= clang
FUZZ_SAN     := -O1 $(SAN_FLAGS)
FUZZ_LIB     := $(filter-out plugin/net/ssh.c plugin/net/ssh_%.c,$(LIB_SRC)) tests/fuzz/stub_ssh.c
FUZZ_HDRS    := $(HDRS) $(wildcard tests/fuzz/*.h)
FUZZ_OBJ     := $(patsubst %.c,build/fuzz/obj/%.o,$(FUZZ_LIB))
FUZZ_BIN     := $(patsubst %,build/fuzz/fuzz-%,$(FUZZ_NAMES))

.PHONY: fuzz fuzz-build fuzz-regress lint-fuzz
fuzz: deps fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/fuzz.sh $(FUZZ_NAMES)
fuzz-build: $(FUZZ_BIN)
fuzz-regress: build/fuzz/regress
.SECONDARY: $(FUZZ_OBJ) $(patsubst %,build/fuzz/obj/tests/fuzz/fuzz_%.o,$(FUZZ_NAMES))

build/fuzz/obj/%.o: %.c $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(WARN) $(DEFS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) $(INCS) -Itests/fuzz -c -o $@ $<

build/fuzz/fuzz-%: build/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lz

# The regression driver: the harnesses, the driver and the ssh stub compiled here, the library's
# objects the ASan tree's (build/asan/obj/, less ssh.c and its parts).
REGRESS_SRC := tests/fuzz/driver.c tests/fuzz/stub_ssh.c $(patsubst %,tests/fuzz/fuzz_%.c,$(FUZZ_NAMES))
REGRESS_OBJ := $(patsubst %.c,build/fuzz/regress-obj/%.o,$(REGRESS_SRC)) \
               $(filter-out build/asan/obj/net/ssh.o build/asan/obj/net/ssh_%.o,$(ASAN_LIB))

build/fuzz/regress-obj/%.o: %.c $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) -DFUZZ_DRIVER $(PKG_CFLAGS) $(INCS) -Itests/fuzz -c -o $@ $<

build/fuzz/regress: $(REGRESS_OBJ)
	$(CC) $(SAN) $(SAN_LD) -o $@ $^ $(PKG_LIBS) -lz

test-build: fuzz-regress
lint: lint-fuzz
lint-fuzz:
	shellcheck -s sh tests/fuzz/*.sh
