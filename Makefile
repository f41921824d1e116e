# cutsnap - consistent multi-file backups with Chandy-Lamport snapshots.
# make            build bin/cutsnap (installs missing Debian packages first)
# make test       unit tests (cmocka) and end-to-end tests (TAP, prove)
# make demo       the bank example, end to end
# make asan       the whole test suite under AddressSanitizer + UBSan
# make valgrind   the unit tests under valgrind

CC      ?= cc
BUILD   ?= build
BIN     ?= bin/cutsnap
PKGS    := sqlite3 libcrypto inih zlib
CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Wshadow -Wformat=2 -Werror
OPT     ?= -O2 -g
SAN     ?=
CFLAGS  += $(CSTD) $(WARN) $(OPT) $(SAN) -MMD -MP
LDFLAGS += $(SAN)

# pkg-config runs only once the dependency step has made sure it can.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

LIB_SRC  := $(wildcard common/*.c store/*.c agent/*.c coordinator/*.c)
CMD_SRC  := $(wildcard cmd/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:%.c=$(BUILD)/%)
LIBA     := $(BUILD)/libcutsnap.a

.PHONY: all deps test unit e2e demo asan valgrind clean
all: $(BIN)

# Every compile waits for the dependency step (order-only, so it runs once
# and before anything else even under make -j).
DEPS_OK := $(BUILD)/.deps-ok
deps: $(DEPS_OK)
$(DEPS_OK): scripts/deps.sh
	@sh scripts/deps.sh
	@mkdir -p $(dir $@) && touch $@

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(LIBA): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CMD_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LIBA) $(PKG_LIBS) -lpthread

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIBA) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(LIBA) $(PKG_LIBS) $(CMOCKA_LIBS) $(LDFLAGS) -lpthread

unit: $(UNIT_BIN)
	CMOCKA_MESSAGE_OUTPUT=TAP prove -f --exec '' $(UNIT_BIN)

e2e: all
	CUTSNAP=$(abspath $(BIN)) prove -f --exec '' tests/e2e/t*.sh

# One prove run, so its closing summary counts every test.
test: all $(UNIT_BIN)
	CMOCKA_MESSAGE_OUTPUT=TAP CUTSNAP=$(abspath $(BIN)) \
	    prove -f --exec '' $(UNIT_BIN) tests/e2e/t*.sh

demo: all
	./$(BIN) demo

asan:
	$(MAKE) BUILD=build-asan BIN=bin/cutsnap-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test

valgrind: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do \
	    echo "valgrind $$t"; \
	    CMOCKA_MESSAGE_OUTPUT=TAP valgrind -q --error-exitcode=99 --leak-check=full \
	        --errors-for-leak-kinds=definite $$t >/dev/null || exit 1; \
	done; echo "valgrind: unit tests clean"

clean:
	rm -rf build build-asan bin

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)
