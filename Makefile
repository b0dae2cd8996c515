# make run   — install what is missing, build, and run CodeHydra on this repository
# make test  — install what is missing, then format check, vet, staticcheck and all tests
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

BINARY := codehydra
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: all run test build lint setup icons clean

all: build

setup:
	./build/setup.sh

build:
	go build -o $(BINARY) .

run: setup build
	./$(BINARY) --project $(CURDIR)

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	staticcheck ./...

test: setup lint
	CODEHYDRA_REQUIRE_OPENCODE=1 go test -race -count=1 ./...

# Redraws assets/*.png; commit the result.
icons:
	go run build/genicons/main.go

clean:
	rm -f $(BINARY)
