# ferry - top-level Makefile wrapping CMake. See README.md.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local

.PHONY: all deps test test-fast test-asan demo quickstart bench bench-relay bench-consumer bench-metrics install uninstall clean format

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j$(JOBS)

$(BUILD)/Makefile:
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null

deps:
	@scripts/install-deps.sh

# The whole suite: normal build (unit, integration, interop) then the ASan+UBSan build
# (unit, integration, fuzz smoke runs). Private servers are started and stopped by the CTest fixture.
test: deps
	@$(MAKE) --no-print-directory all
	@cd $(BUILD) && ctest --output-on-failure -j2
	@$(MAKE) --no-print-directory test-asan

test-fast: all
	@cd $(BUILD) && ctest --output-on-failure -j2 -L unit

# Sanitizer pass, built with clang (the normal build uses the default cc, gcc on Debian), so
# both compilers see the code with -Werror; also builds the libFuzzer targets and smoke-runs them.
# The sanitizers need llvm-symbolizer (Debian's llvm-14, which install-deps.sh installs, has it
# only under a versioned name) for readable reports and for the name-based leak suppressions.
SYMBOLIZER ?= $(firstword $(wildcard /usr/lib/llvm-14/bin/llvm-symbolizer /usr/bin/llvm-symbolizer))
test-asan:
	@CC=clang cmake -S . -B $(ASAN_BUILD) -DFERRY_SANITIZE=ON -DFERRY_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	@cd $(ASAN_BUILD) && $(if $(SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(SYMBOLIZER)) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j2 -LE interop

# The shop and taskflow under faults and SIGKILLs, ending in a reconciliation (scripts/demo.sh).
demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)

# The first steps: a C producer and worker, then the ferry CLI (scripts/quickstart.sh).
quickstart: deps
	@$(MAKE) --no-print-directory all
	@scripts/quickstart.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh $(BUILD)

bench-relay: deps
	@$(MAKE) --no-print-directory all
	@bench/relay/run.sh $(BUILD)

bench-consumer: deps
	@$(MAKE) --no-print-directory all
	@bench/consumer/run.sh $(BUILD)

bench-metrics: deps
	@$(MAKE) --no-print-directory all
	@bench/metrics/run.sh $(BUILD)

# PREFIX applies at install time too (the build directory may have been configured earlier);
# DESTDIR is honoured. Quiet: one summary line instead of one per file (errors still show);
# the list is $(BUILD)/install_manifest.txt, which `make uninstall` removes exactly.
# Quiet: the build's own lines are shown only when it fails.
install: $(BUILD)/Makefile
	@log=$$(mktemp) && if cmake --build $(BUILD) -j$(JOBS) >"$$log" 2>&1; then rm -f "$$log"; \
	  else cat "$$log" >&2; rm -f "$$log"; exit 1; fi
	@cmake --install $(BUILD) --prefix "$(PREFIX)" >/dev/null
	@echo "ferry install: $$(grep -c "" $(BUILD)/install_manifest.txt) files under $(DESTDIR)$(PREFIX) (listed in $(BUILD)/install_manifest.txt; make uninstall removes them)"

uninstall:
	@cmake -DMANIFEST=$(abspath $(BUILD))/install_manifest.txt -P cmake/uninstall.cmake

clean:
	@rm -rf $(BUILD) $(ASAN_BUILD)
