# cutsnap - consistent multi-file backups with Chandy-Lamport snapshots.
# make            build bin/cutsnap (installs the missing Debian packages of
#                 the build list first: scripts/deps.sh build)
# make check      the quick tier, before every commit (under two minutes):
#                 the unit tests and the e2e scripts of CHECK_E2E
# make test       unit tests (cmocka) and end-to-end tests (TAP, prove),
#                 the EXPENSIVE ones included (CUTSNAP_TEST_SEED=n: another
#                 seed for the scripts' random choices than the fixed one)
#                 (check, test and the other test targets install the
#                 test list first: scripts/deps.sh test)
# make demo       the bank example, end to end
# make asan       the whole test suite under AddressSanitizer + UBSan
# make valgrind   the unit tests under valgrind
# make fuzz       each libFuzzer target for FUZZ_SECONDS (clang, ASan, UBSan)
# make bench      the benchmark: prints a table, writes bench/RESULTS.md
#                 (make bench-deps installs restic and borg for it)
# make torture    the fault loop, ROUNDS rounds (default 500; SEED=n replays;
#                 ENCRYPT=1 on an encrypted repository; TCP=1 with the
#                 agents on TCP with mutual TLS)
# make install    bin/cutsnap, its manual page and bash completion,
#                 libcutsnap (cutsnap.h, libcutsnap.so.0, libcutsnap.a,
#                 cutsnap.pc, cutsnap(3)) and the systemd units
#                 (SYSTEMDUNITDIR, default PREFIX/lib/systemd/system)
#                 under PREFIX (default /usr/local; DESTDIR is honoured)

CC      ?= cc
BUILD   ?= build
BIN     ?= bin/cutsnap
PKGS    := sqlite3 libcrypto libssl inih libisal libzstd zlib libcurl
CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Wshadow -Wformat=2 -Werror
OPT     ?= -O2 -g
SAN     ?=
CFLAGS  += $(CSTD) $(WARN) $(OPT) $(SAN) -MMD -MP
LDFLAGS += $(SAN)

# pkg-config runs only once the dependency step has made sure it can.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl is not linked: s3/curl_dl.c loads it for S3 repositories
# only (every command would otherwise pay its 28 libraries at start-up).
PKG_LIBS   = $(shell pkg-config --libs $(filter-out libcurl,$(PKGS)) 2>/dev/null) -ldl
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

LIB_SRC  := $(wildcard api/*.c lib/*.c crypto/*.c log/*.c net/*.c proto/*.c s3/*.c store/*.c agent/*.c coordinator/*.c tools/*.c)
CMD_SRC  := $(wildcard cmd/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:%.c=$(BUILD)/%)
LIBA     := $(BUILD)/libcutsnap.a

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib

# libcutsnap.so.0: the same sources compiled with -fPIC in a tree of their
# own, exporting only the public API (api/libcutsnap.map lists it by name:
# internal helpers start with cs_ too). build/libcutsnap.a, which the
# command and the tests link, is installed as the static library.
SO_NAME  := libcutsnap.so.0
SO       := $(BUILD)/$(SO_NAME)
PIC_OBJ  := $(LIB_SRC:%.c=$(BUILD)/pic/%.o)
API_MAP  := api/libcutsnap.map
API_NAMES = $(shell sed -n 's/^[[:space:]]*\(cs_[a-z0-9_]*\);$$/\1/p' $(API_MAP))

# systemd reads units from /usr/local/lib/systemd/system as well as from
# /usr/lib/systemd/system, so PREFIX/lib/systemd/system suits both.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR    ?= $(PREFIX)/lib/sysusers.d
UNITS := cutsnap-agent@.service cutsnap-snapshot@.service cutsnap-snapshot@.timer

.PHONY: all deps test-deps check test test-numbers unit e2e demo asan asan-ci valgrind fuzz fuzz-bins fuzz-run torture clean \
    bench bench-deps install
all: $(BIN) $(SO)

# Every compile waits for the dependency step (order-only, so it runs once
# and before anything else even under make -j). The build needs only the
# libraries; what the tests run is a list of its own, installed by the
# targets that run tests.
DEPS_OK := $(BUILD)/.deps-ok
TEST_DEPS_OK := $(BUILD)/.test-deps-ok
deps: $(DEPS_OK)
$(DEPS_OK): scripts/deps.sh
	@sh scripts/deps.sh build
	@mkdir -p $(dir $@) && touch $@
test-deps: $(TEST_DEPS_OK)
$(TEST_DEPS_OK): scripts/deps.sh
	@sh scripts/deps.sh test
	@mkdir -p $(dir $@) && touch $@

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/pic/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC $(PKG_CFLAGS) -c $< -o $@

$(SO): $(PIC_OBJ) $(API_MAP)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(SO_NAME) \
	    -Wl,--version-script=$(API_MAP) -Wl,--no-undefined -o $@ \
	    $(PIC_OBJ) $(PKG_LIBS) -lpthread
	ln -sf $(SO_NAME) $(BUILD)/libcutsnap.so

$(BIN): $(CMD_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LIBA) $(PKG_LIBS) -lpthread

# Every unit-test program links tests/unit/unit.c (unit.h: temp
# directories, file helpers, report fixtures).
UNIT_OBJ := $(BUILD)/tests/unit/unit.o
.SECONDARY: $(UNIT_OBJ)
$(UNIT_OBJ): | $(TEST_DEPS_OK)
$(BUILD)/tests/unit/test_%: tests/unit/test_%.c $(UNIT_OBJ) $(LIBA) | $(DEPS_OK) $(TEST_DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(UNIT_OBJ) $(LIBA) $(PKG_LIBS) $(CMOCKA_LIBS) $(LDFLAGS) -lpthread

# The I/O fault shim (tests/fault/faultfs.c), preloaded by the e2e fault
# tests; built without sanitizers, it only forwards to libc.
FAULTFS := $(BUILD)/faultfs.so
$(FAULTFS): tests/fault/faultfs.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g -fPIC -shared -o $@ $< -ldl

# The e2e tests' reader of an object-store commit's manifest chain
# (tests/s3/mdelta_apply.c): its base and deltas applied, as cutsnap does.
MDELTA := $(BUILD)/mdelta-apply
$(MDELTA): tests/s3/mdelta_apply.c $(LIBA) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIBA) $(PKG_LIBS) $(LDFLAGS) -lpthread

unit: $(TEST_DEPS_OK) $(UNIT_BIN)
	CMOCKA_MESSAGE_OUTPUT=TAP prove -f --exec '' $(UNIT_BIN)

# The module-level include graph has no circle outside agent/ and no room
# below cmd/ includes cmd/ (tests/include-graph.py), with a self-test on
# fixture trees; no caller
# compares an error message's words (tests/msg-compare-test.sh, a grep
# checked on fixtures first): TAP scripts run with the unit tests.
STRUCT_TESTS := tests/include-graph-test.sh tests/msg-compare-test.sh

# Every e2e test has a number of its own (tests/check-numbers.sh).
test-numbers:
	@sh tests/check-numbers.sh

# The object-store tests share one S3 server (Ceph radosgw on loopback,
# tests/s3/radosgw.sh), started once for the run and stopped after it.
S3RUN := bash tests/s3/radosgw.sh run
# $(call s3run,SCRIPTS): S3RUN when one of SCRIPTS needs the server (it
# declares the S3 prerequisite: test_require S3, tests/e2e/lib.sh), else
# nothing: `make test E2E="..."` with no object-store script in it starts
# no radosgw.
s3run = $(if $(shell grep -lE '^test_require .*\bS3\b' $(filter %.sh,$(1)) /dev/null),$(S3RUN))

# The targets that run every script set CUTSNAP_TEST_EXPENSIVE=1: the
# scripts that declare the EXPENSIVE prerequisite (test_require
# EXPENSIVE: the fault loops, the clusters of many agents) are skipped by
# a plain prove run without it. The seed of the scripts' random choices
# (lib.sh) is fixed, so that two runs of the suite make the same choices;
# CUTSNAP_TEST_SEED=n (in the environment or on the command line) runs
# with another, or replays the one a failing script printed ("# seed n").
CUTSNAP_TEST_SEED ?= 1
TEST_ENV := CUTSNAP_TEST_EXPENSIVE=1 CUTSNAP_TEST_SEED=$(CUTSNAP_TEST_SEED)

# The longest scripts (the fault loops, the random-transfer run, the 16-
# and 32-agent clusters: over a third of the suite's time) start first, so
# that the jobs end together, and CI's sanitizer pass (asan-ci) leaves them
# to the optimized pass: ASan doubles their time. `make asan` runs them too.
# t0481 measures the agent's memory and descriptors after a flood, which
# under ASan count its shadow memory and its own descriptors: its figures
# hold only for the optimized build.
E2E_LONG := $(addprefix tests/e2e/,t0420-torture-overlap.sh t0040-io-faults.sh \
	t0124-torture-mixed-histories.sh t0030-torture.sh \
	t0006-random-transfers.sh t0364-torture-tcp.sh t0016-many-agents.sh \
	t0122-thirty-two-agents.sh t0461-torture-partial-restore.sh \
	t0481-handshake-flood.sh)
E2E_REST := $(filter-out $(E2E_LONG),$(sort $(wildcard tests/e2e/t*.sh)))
E2E      := $(E2E_LONG) $(E2E_REST)

# TEST_JOBS test scripts at a time (one per core by default: each has its
# own directory, bucket, ports and namespaces, and most of a script's time
# is waiting), each line with its time, so a slow run shows where the time
# went.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
PROVE := prove -j$(TEST_JOBS) --timer -f --exec ''

e2e: $(TEST_DEPS_OK) all $(FAULTFS) $(MDELTA) test-numbers
	CUTSNAP=$(abspath $(BIN)) FAULTFS=$(abspath $(FAULTFS)) CUTSNAP_MDELTA=$(abspath $(MDELTA)) $(TEST_ENV) \
	    $(call s3run,$(E2E)) $(PROVE) $(E2E)

# The quick tier: every unit test and the e2e scripts below, which cover
# the bank cases, restore, kill -9, dead letters, one history, fencing,
# encryption, TLS and bad input in about a minute on two cores (no S3
# server, no fault loop); `make test` runs everything.
CHECK_E2E := $(addprefix tests/e2e/,t0001-cli-basics.sh t0002-bad-input.sh \
	t0003-seed-fifo.sh t0004-seed-nonfifo.sh t0005-seed-case2.sh \
	t0007-restore-twice.sh t0008-damaged-repo.sh t0009-kill9.sh \
	t0012-security.sh t0013-concurrent-snapshots.sh t0019-config.sh \
	t0041-authenticated.sh t0101-status.sh t0200-deadletter.sh \
	t0341-encryption.sh t0360-tls-loopback.sh t0460-restore-fence.sh)

check: $(TEST_DEPS_OK) all $(UNIT_BIN) $(FAULTFS) $(MDELTA) test-numbers
	CMOCKA_MESSAGE_OUTPUT=TAP CUTSNAP=$(abspath $(BIN)) \
	    FAULTFS=$(abspath $(FAULTFS)) CUTSNAP_MDELTA=$(abspath $(MDELTA)) CUTSNAP_TEST_SEED=$(CUTSNAP_TEST_SEED) \
	    $(PROVE) $(UNIT_BIN) $(STRUCT_TESTS) $(CHECK_E2E)

# One prove run, so its closing summary counts every test.
test: $(TEST_DEPS_OK) all $(UNIT_BIN) $(FAULTFS) $(MDELTA) test-numbers
	CMOCKA_MESSAGE_OUTPUT=TAP CUTSNAP=$(abspath $(BIN)) \
	    FAULTFS=$(abspath $(FAULTFS)) CUTSNAP_MDELTA=$(abspath $(MDELTA)) $(TEST_ENV) \
	    $(call s3run,$(E2E)) $(PROVE) $(UNIT_BIN) $(STRUCT_TESTS) $(E2E)

demo: all
	./$(BIN) demo

ASAN_MAKE := $(MAKE) BUILD=build-asan BIN=bin/cutsnap-asan \
	OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

asan:
	$(ASAN_MAKE) test

# CI's sanitizer pass: every unit test and every e2e script but E2E_LONG.
asan-ci:
	$(ASAN_MAKE) E2E="$(E2E_REST)" test

valgrind: $(TEST_DEPS_OK) $(UNIT_BIN)
	@for t in $(UNIT_BIN); do \
	    echo "valgrind $$t"; \
	    CMOCKA_MESSAGE_OUTPUT=TAP valgrind -q --error-exitcode=99 --leak-check=full \
	        --errors-for-leak-kinds=definite $$t >/dev/null || exit 1; \
	done; echo "valgrind: unit tests clean"

# libFuzzer: the library is built by clang with coverage hooks
# (fuzzer-no-link) into its own tree; each tests/fuzz/fuzz_X.c is one target
# run over tests/fuzz/corpus/X (the committed seeds, read only) with new
# inputs kept in build-fuzz/corpus/X. A crash, leak or UBSan report fails.
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_BIN     := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 12
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all

fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	    SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" fuzz-run

fuzz-bins: $(FUZZ_BIN)

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIBA) | $(DEPS_OK) $(TEST_DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIBA) \
	    $(PKG_LIBS) $(LDFLAGS) -lpthread

fuzz-run: fuzz-bins
	@for t in $(FUZZ_NAMES); do \
	    mkdir -p $(BUILD)/corpus/$$t && \
	    echo "fuzz $$t: $(FUZZ_SECONDS) s" && \
	    $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	        -print_final_stats=1 -artifact_prefix=$(BUILD)/crash-$$t- \
	        $(BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	        >$(BUILD)/fuzz-$$t.log 2>&1 || \
	        { tail -n 40 $(BUILD)/fuzz-$$t.log; exit 1; }; \
	    grep -E '^(stat::number_of_executed_units|stat::new_units_added)' \
	        $(BUILD)/fuzz-$$t.log | sed "s/^/  /"; \
	    grep -E 'cov: [0-9]+' $(BUILD)/fuzz-$$t.log | tail -n 1 | sed "s/^/  /"; \
	done; echo "fuzz: no crash in $(FUZZ_NAMES)"

bench-deps:
	@sh scripts/deps.sh bench

$(BUILD)/bench/%: bench/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -lpthread -lssl -lcrypto

# kdfms times the product's own key derivation (the encrypted rows' floor).
$(BUILD)/bench/kdfms: bench/kdfms.c $(LIBA) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -I. -o $@ $< $(LIBA) $(PKG_LIBS) $(LDFLAGS) -lpthread

# decpar decodes and hashes chunks compressed as the product compresses
# them (the encrypted verify rows' floor).
$(BUILD)/bench/decpar: bench/decpar.c $(LIBA) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -I. -o $@ $< $(LIBA) $(PKG_LIBS) $(LDFLAGS) -lpthread

# libget times libcutsnap's gets as an application links it (the .so).
$(BUILD)/bench/libget: bench/libget.c $(SO) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iinclude -o $@ $< -L$(BUILD) -lcutsnap \
	    -Wl,-rpath,$(abspath $(BUILD))

# libtxn commits transactions from many connections (group commit).
$(BUILD)/bench/libtxn: bench/libtxn.c $(SO) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iinclude -o $@ $< -L$(BUILD) -lcutsnap \
	    -Wl,-rpath,$(abspath $(BUILD)) -lpthread

bench: all bench-deps $(BUILD)/bench/syncw $(BUILD)/bench/pingpong $(BUILD)/bench/shapar \
    $(BUILD)/bench/kdfms $(BUILD)/bench/decpar $(BUILD)/bench/libget \
    $(BUILD)/bench/libtxn
	bash bench/run.sh

ROUNDS ?= 500
torture: all
	CUTSNAP=$(abspath $(BIN)) tests/torture/torture.sh -n $(ROUNDS) \
	    $(if $(SEED),-s $(SEED)) $(if $(ENCRYPT),-e) $(if $(TCP),-t)

# Installs what "make" built; it does not build (so that it can run as
# another user, e.g. with sudo, without writing into the tree).
install:
	@test -x $(BIN) || { echo "no $(BIN): run make first" >&2; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/cutsnap
	install -m 0644 man/cutsnap.1 $(DESTDIR)$(PREFIX)/share/man/man1/cutsnap.1
	install -m 0644 completion/cutsnap.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/cutsnap
	@test -f $(SO) || { echo "no $(SO): run make first" >&2; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 0644 include/cutsnap.h $(DESTDIR)$(PREFIX)/include/cutsnap.h
	install -m 0755 $(SO) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libcutsnap.so
	install -m 0644 $(LIBA) $(DESTDIR)$(LIBDIR)/libcutsnap.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@LIBS_PRIVATE@|$(PKG_LIBS) -lpthread|' api/cutsnap.pc.in \
	    >$(DESTDIR)$(LIBDIR)/pkgconfig/cutsnap.pc
	install -m 0644 man/cutsnap.3 $(DESTDIR)$(PREFIX)/share/man/man3/cutsnap.3
	@# One page for the API: each function's name leads to it.
	for n in $(API_NAMES); do \
	    echo '.so man3/cutsnap.3' >$(DESTDIR)$(PREFIX)/share/man/man3/$$n.3; \
	done

	install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	@# The units name the binary where it was installed (@BINDIR@).
	for u in $(UNITS); do \
	    src=contrib/systemd/$$u; [ -f $$src ] || src=$$src.in; \
	    sed 's|@BINDIR@|$(PREFIX)/bin|g' $$src >$(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp && \
	    chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp && \
	    mv $(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/$$u || exit 1; \
	done
	install -m 0644 contrib/systemd/cutsnap.sysusers \
	    $(DESTDIR)$(SYSUSERSDIR)/cutsnap.conf

clean:
	rm -rf build build-asan build-fuzz bin

-include $(LIB_OBJ:.o=.d) $(PIC_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(UNIT_OBJ:.o=.d) $(UNIT_BIN:=.d)
