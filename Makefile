# Steward — see README.md.
GO        ?= go
BIN       := bin
PLUGINS   := $(notdir $(wildcard plugins/*))
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/stewardhq/steward/host/app.Version=$(VERSION)
TESTFLAGS ?=
# Flags of the load tool (make load; bench/load -h lists them).
LOADFLAGS ?=

# The container image (deploy/image): its name, the folder its tree is
# staged in, and the plugins it carries (the test plugin is for the tests).
IMAGE         ?= localhost/steward:$(VERSION)
IMAGE_STAGE   := $(BIN)/image
IMAGE_PLUGINS := $(filter-out testplugin,$(PLUGINS))
# The Helm chart's tests (deploy/helm), a module of their own.
HELMCHECK := tools/helmcheck

# Out-of-tree plugins: modules of their own, which `go test ./...` and
# `go vet ./...` at the root do not enter and `make build` does not build.
EXAMPLES  := examples/acme-evidence
REDOCLY   := tools/openapilint/node_modules/.bin/redocly
# axe-core, which the browser tests inject into every page they scan.
AXE       := tools/axe/node_modules/axe-core/axe.min.js
# Stoplight Elements' bundle, which the host embeds to serve /docs.
ELEMENTS  := host/server/apidocs/web-components.min.js
# htmx, which the web UI (ui/) embeds and serves from its own origin.
HTMX      := ui/static/vendor/htmx.min.js

.PHONY: build run test test-race fuzz bench load lint proto clean screenshots image image-rootfs chart-test

build: $(ELEMENTS) $(HTMX)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/steward ./host/cmd/steward
	@for p in $(PLUGINS); do \
		echo "build plugin $$p"; \
		$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p || exit 1; \
	done

run: build
	$(BIN)/steward serve

# Every test: unit, store (SQLite and PostgreSQL), plugin protocol,
# browser (headless Chromium with axe-core) and
# end-to-end against the built binaries, whose responses are checked against
# the OpenAPI document, itself linted with Redocly CLI (TestOpenAPILint);
# then each example's own tests, in its module. Only tests that mostly wait
# call t.Parallel, so -parallel 4 lets four of them wait at once.
test: build $(REDOCLY) $(AXE)
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) STEWARD_TEST_REDOCLY=$(CURDIR)/$(REDOCLY) STEWARD_TEST_AXE=$(CURDIR)/$(AXE) $(GO) test $(TESTFLAGS) -count=1 -parallel 4 -timeout 25m ./...
	@for m in $(EXAMPLES); do \
		echo "test $$m"; \
		(cd $$m && $(GO) test $(TESTFLAGS) -count=1 -timeout 5m ./...) || exit 1; \
	done
	$(MAKE) --no-print-directory chart-test

# The Helm chart rendered with Helm's own library, each manifest decoded
# strictly into its Kubernetes type and checked.
chart-test:
	cd $(HELMCHECK) && $(GO) test $(TESTFLAGS) -count=1 -timeout 10m ./...

# The image's tree: static binaries (CGO_ENABLED=0; the SQLite driver is
# pure Go) built here, so no Go image is needed, then /etc, /tmp and /data
# (deploy/image/rootfs.sh). deploy/Containerfile builds an image from it
# too: docker build -f deploy/Containerfile $(IMAGE_STAGE).
image-rootfs: $(ELEMENTS) $(HTMX)
	rm -rf $(IMAGE_STAGE)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_STAGE)/rootfs/steward ./host/cmd/steward
	@for p in $(IMAGE_PLUGINS); do \
		echo "build plugin $$p (static)"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(IMAGE_STAGE)/rootfs/plugins/$$p ./plugins/$$p || exit 1; \
	done
	deploy/image/rootfs.sh $(IMAGE_STAGE)

# The container image, from scratch, with buildah (deploy/image/build.sh);
# skipped where buildah is not installed.
ifeq ($(shell command -v buildah 2>/dev/null),)
image:
	@echo "make image: skipped: buildah is not installed (Debian: apt-get install buildah)"
else
image: image-rootfs
	deploy/image/build.sh $(IMAGE_STAGE) $(IMAGE) $(VERSION)
endif

# The API reference's script, style sheet and licence, at the version
# web/apidocs/package-lock.json pins; not committed.
$(ELEMENTS): web/apidocs/package.json web/apidocs/package-lock.json web/fetch-npm-files.sh
	web/fetch-npm-files.sh web/apidocs @stoplight/elements host/server/apidocs \
		web-components.min.js web-components.min.js.LICENSE.txt styles.min.css
	@touch $@

# htmx's minified script, at the version web/htmx/package-lock.json pins;
# not committed. Without it ui still builds and its pages render, but their
# slots do not load.
$(HTMX): web/htmx/package.json web/htmx/package-lock.json web/fetch-npm-files.sh
	web/fetch-npm-files.sh web/htmx htmx.org ui/static/vendor dist/htmx.min.js
	@touch $@

# The OpenAPI linter, at the version tools/openapilint/package-lock.json pins.
$(REDOCLY): tools/openapilint/package.json tools/openapilint/package-lock.json
	cd tools/openapilint && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

# axe-core, at the version tools/axe/package-lock.json pins.
$(AXE): tools/axe/package.json tools/axe/package-lock.json
	cd tools/axe && npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

# The README's screenshots: the browser tests, writing each page in light
# and dark mode to docs/screenshots/ (make test writes them to a folder of
# its own).
screenshots: build $(AXE)
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) STEWARD_TEST_AXE=$(CURDIR)/$(AXE) STEWARD_TEST_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'TestUIInBrowser' ./host/e2e/

# The packages that run goroutines of their own (caches, kept reads, revocations,
# scheduler, supervisor, rate limits, the Redis connection's outage state,
# SDK server and harness, simulator stack), under the race detector; CI runs
# it after `make test`.
RACE_PKGS := ./core/cache/ ./core/revcache/ ./core/cloud/ ./core/cloudsim/ ./core/cloudsim/simdns/ ./core/cloudsim/stack/ \
	./core/store/... ./host/auth/ ./host/authcache/ ./host/jobs/ ./host/plugins/ ./host/ratelimit/ ./host/redisconn/ ./host/tenancy/ \
	./host/server/ ./host/pages/ ./host/websession/ ./ui/ ./sdk/...

test-race: build
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 10m $(RACE_PKGS)

# Every fuzz target of the root module and the examples' modules, found
# anew each run, fuzzed one after another for FUZZTIME each (tools/fuzz.sh:
# its header gives the defaults); fails if any target finds a failing input,
# and names the file Go wrote it to. CI runs it after `make test-race`.
fuzz:
	GO=$(GO) tools/fuzz.sh . $(EXAMPLES)

# Plugin hop against in-host, both data planes, and start-up; see
# BENCHMARKS.md. Each load run is one fixed window, so each runs once.
bench: build
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./bench/...
	$(GO) test -run '^$$' -bench 'DailyCosts|ResourceCosts|Demo' -benchtime 3x -timeout 10m ./core/cloud/ ./core/cloudsim/world/
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'CostIngest|Stage|ResourceCosts' -benchtime 1x -timeout 10m ./plugins/cost/ingest/ ./plugins/cost/ledger/
	STEWARD_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'InventorySync' -benchtime 1x -timeout 20m ./plugins/resources/inventory/
	$(GO) test -run '^$$' -bench 'IdentitySync' -benchtime 1x -timeout 20m ./plugins/identity/directory/
	$(GO) test -run '^$$' -bench 'TenantSyncStatus' -benchtime 200x ./host/pages/
	$(GO) test -run '^$$' -bench 'ComplianceSync|StatesReplace' -benchtime 1x -timeout 10m ./plugins/compliance/states/
	$(GO) test -run '^$$' -bench 'Raise' -benchtime 300x ./host/notifications/
	$(GO) test -run '^$$' -bench 'Deliver' -benchtime 1x -count 3 ./host/notifications/
	$(GO) test -run '^$$' -bench 'Coverage' -benchtime 1x -timeout 10m ./plugins/compliance/mapping/
	$(GO) test -run '^$$' -bench 'CoverageStore' -benchtime 1x -timeout 10m ./plugins/compliance/coverage/
	$(GO) test -run '^$$' -bench 'RuleEvaluation' -benchtime 1x -timeout 20m ./plugins/compliance/rules/
	$(GO) test -run '^$$' -bench 'PostureSync|ReportIngest' -benchtime 3x -timeout 10m ./plugins/dmarc/domains/ ./plugins/dmarc/reports/
	$(GO) test -run '^$$' -bench 'Check' -timeout 5m ./plugins/dmarc/posture/

# Proof at scale: the load tool starts bin/ in each deployment (SQLite; PostgreSQL
# and Redis with one replica, and with two behind its balancer) on the demo world
# and on a world of 100 tenants, drives a realistic mix and prints the figures
# BENCHMARKS.md keeps. Not part of make test. Runs from the repository's root.
load: build
	$(GO) build -o $(BIN)/steward-load ./bench/load
	$(BIN)/steward-load -bin $(BIN) $(LOADFLAGS)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || (gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'); exit 1)
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	@for m in $(EXAMPLES) $(HELMCHECK); do \
		echo "lint $$m"; \
		(cd $$m && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...) || exit 1; \
	done

# Regenerates the protocol's Go code; needs protoc (Debian: protobuf-compiler).
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I proto \
		--go_out=. --go_opt=module=github.com/stewardhq/steward \
		--go-grpc_out=. --go-grpc_opt=module=github.com/stewardhq/steward \
		proto/steward/plugin/v1/*.proto

clean:
	rm -rf $(BIN) tools/openapilint/node_modules tools/axe/node_modules host/server/apidocs/web-components.min.js* host/server/apidocs/styles.min.css $(HTMX)
