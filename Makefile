.PHONY: test demo build

# Every test, with PostgreSQL found or started (see scripts/test).
test:
	scripts/test

demo:
	go run ./cmd/reconcile demo

build:
	go build -o reconcile ./cmd/reconcile
