# lume-metal: host tool (plugin/), guest shim and probe (shim/), tests (tests/).
VERSION  := 0.1.0
PKGS     := libssh2 libcjson libarchive libcrypto libcurl
CC       ?= cc
WARN     := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
DEFS     := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DLM_VERSION='"$(VERSION)"' \
            -DLM_DATADIR='"$(CURDIR)"'
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -pthread
CFLAGS   ?= -O2 -g
SAN      := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

LIB_SRC  := $(filter-out plugin/main.c plugin/cli%.c plugin/cmd_%.c,$(wildcard plugin/*.c))
CMD_SRC  := plugin/main.c $(wildcard plugin/cli*.c) $(wildcard plugin/cmd_*.c)
HDRS     := $(wildcard plugin/*.h)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRC))

.PHONY: all deps test test-build demo clean lint
all: plugin/lume-metal shim

deps:
	sh scripts/deps.sh

plugin/lume-metal: $(LIB_SRC) $(CMD_SRC) $(HDRS)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(PKG_CFLAGS) -o $@ $(LIB_SRC) $(CMD_SRC) $(PKG_LIBS)

# The same tool under ASan and UBSan, used by the shell tests, and the unit tests: each source
# is compiled once under the sanitizers (build/asan/obj/) and linked into every binary.
ASAN_LIB := $(patsubst plugin/%.c,build/asan/obj/%.o,$(LIB_SRC))
ASAN_CMD := $(patsubst plugin/%.c,build/asan/obj/%.o,$(CMD_SRC))

build/asan/obj/%.o: plugin/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) $(PKG_CFLAGS) -c -o $@ $<

build/asan/lume-metal: $(ASAN_LIB) $(ASAN_CMD)
	$(CC) $(SAN) -o $@ $^ $(PKG_LIBS)

build/tests/%: tests/unit/%.c tests/unit/unit.h $(ASAN_LIB) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) $(PKG_CFLAGS) -Iplugin -o $@ $< $(ASAN_LIB) $(PKG_LIBS)

build/bench/bench-upload: scripts/bench/bench_upload.c $(LIB_SRC) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(CFLAGS) $(PKG_CFLAGS) -Iplugin -o $@ $< $(LIB_SRC) $(PKG_LIBS)

-include shim/shim.mk

lint:
	shellcheck -s sh guest-payload/*.sh guest-payload/run-with-shim tests/guest-sim/bin/* \
	    tests/shim/*.sh tests/guest/*.sh tests/guest/standin/* tests/deploy/*.sh \
	    tests/sshd.sh tests/registry.sh tests/lume-sim/* tests/cli/*.sh tests/lib.sh tests/run.sh \
	    scripts/deps.sh scripts/demo scripts/bench-upload scripts/bench-deploy scripts/lume-preprovision \
	    scripts/mac-first-run \
	    scripts/bench-fleet scripts/bench-fleet.d/*.sh scripts/fleet-rollback scripts/ansible/inventory

# What the tests need is built with one job per core; then the tests run.
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
test: deps
	$(MAKE) -j$(JOBS) test-build
	sh tests/run.sh

test-build: all build/asan/lume-metal $(UNIT_BIN) shim-test-build lint

demo: deps all
	sh scripts/demo

clean:
	rm -rf build plugin/lume-metal $(SHIM_CLEAN)

# Fuzzing (tests/fuzz/README.md): one libFuzzer harness per parser, built with clang into
# build/fuzz/fuzz-NAME; `make fuzz` runs each for FUZZ_SECONDS. Every harness links
# tests/fuzz/stub_ssh.c in place of plugin/ssh.c. `make test` runs build/fuzz/regress, all the
# harnesses under $(CC) with ASan and UBSan, over their corpora (tests/fuzz/t-regress.sh).
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 300
FUZZ_CC      ?= clang
FUZZ_LIB     := $(filter-out plugin/ssh.c,$(LIB_SRC)) tests/fuzz/stub_ssh.c
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
	$(FUZZ_CC) $(WARN) $(DEFS) $(SAN) -fsanitize=fuzzer-no-link $(PKG_CFLAGS) -Iplugin -Itests/fuzz -c -o $@ $<

build/fuzz/fuzz-%: build/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_OBJ)
	$(FUZZ_CC) $(SAN) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -lz

build/fuzz/regress: tests/fuzz/driver.c $(patsubst %,tests/fuzz/fuzz_%.c,$(FUZZ_NAMES)) $(FUZZ_LIB) $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(DEFS) $(SAN) -DFUZZ_DRIVER $(PKG_CFLAGS) -Iplugin -Itests/fuzz -o $@ \
	    $(filter %.c,$^) $(PKG_LIBS) -lz

test-build: fuzz-regress
lint: lint-fuzz
lint-fuzz:
	shellcheck -s sh tests/fuzz/*.sh
