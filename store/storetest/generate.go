// Package storetest helps the tests of the store and of its callers: a
// PostgreSQL schema of its own for each test, and synthetic runs. It
// imports package testing, so only tests may import it; the commands take
// their synthetic runs from storegen.
package storetest

import (
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storegen"
)

// Runs is storegen.Runs, for the tests that already call it here.
func Runs(seed uint64, n int) []store.Run { return storegen.Runs(seed, n) }

// Grids is storegen.Grids.
func Grids(seed uint64, n, contexts, concurrencies int) []store.Run {
	return storegen.Grids(seed, n, contexts, concurrencies)
}

// Scaled is storegen.Scaled.
func Scaled(r store.Run, f func(contextTokens, concurrency int) float64) store.Run {
	return storegen.Scaled(r, f)
}
