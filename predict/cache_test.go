package predict

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// storeOf is a store holding runs, and their stored ids in order.
func storeOf(t *testing.T, runs []store.Run) (*store.Store, []string) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	stored, _, err := st.CreateRuns(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(stored))
	for i, r := range stored {
		ids[i] = r.ID
	}
	return st, ids
}

// fittable are the first n of runs with a valid decode cell to fit.
func fittable(t *testing.T, runs []store.Run, n int) []store.Run {
	t.Helper()
	var out []store.Run
	for _, r := range runs {
		if slices.ContainsFunc(r.Decode, func(c store.DecodeCell) bool { return c.Status == store.StatusValid }) {
			out = append(out, r)
		}
	}
	if len(out) < n {
		t.Fatalf("%d of %d generated runs can be fitted; want %d", len(out), len(runs), n)
	}
	return out[:n]
}

// kept are the keys of the done fits c keeps, the most recently used first,
// and checks that c.bytes is what they hold.
func kept(t *testing.T, c *Service) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	var sum int64
	for e := c.lru.Front(); e != nil; e = e.Next() {
		call := e.Value.(*fitCall)
		if call.bytes > 0 {
			keys, sum = append(keys, call.key), sum+call.bytes
		}
	}
	if sum != c.bytes || len(c.fits) != c.lru.Len() {
		t.Fatalf("the fits kept hold %d bytes, the count says %d; %d in the map, %d in the list", sum, c.bytes, len(c.fits), c.lru.Len())
	}
	return keys
}

// TestFitCacheEvictsLeastRecentlyUsedByBytes: the fits kept never hold
// more than the bound; those dropped are the least recently used, and no
// more of them than the bound needs; a dropped run answers as before,
// after a refit.
func TestFitCacheEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	ctx := context.Background()
	st, ids := storeOf(t, fittable(t, storetest.Runs(3, 12), 6))
	size := map[string]int64{}
	all := patient(st, DefaultCacheBytes, nil)
	var total int64
	for _, id := range ids {
		if _, err := all.modelWithin(ctx, -1, id); err != nil {
			t.Fatal(err)
		}
		size[id] = all.fits[id].bytes
		total += size[id]
	}

	var fits atomic.Int64
	bound := total / 2
	c := patient(st, bound, func(time.Duration) { fits.Add(1) })
	q := calculator.Query{ContextTokens: 16384, Concurrency: 8}
	first, err := c.Decode(ctx, Selection{RunID: ids[1]}, q)
	if err != nil {
		t.Fatal(err)
	}
	used := []string{ids[1]} // least recent first
	for _, id := range []string{ids[2], ids[0], ids[3], ids[4], ids[1], ids[5]} {
		if _, err := c.modelWithin(ctx, -1, id); err != nil {
			t.Fatal(err)
		}
		used = append(used, id)
		if c.bytes > bound {
			t.Fatalf("after %s the fits kept hold %d bytes, over the bound of %d", id, c.bytes, bound)
		}
	}
	// LRU keeps the longest run of most recent fits that fits the bound.
	var want []string
	var sum int64
	seen := map[string]bool{}
	for i := len(used) - 1; i >= 0; i-- {
		id := used[i]
		if seen[id] {
			continue
		}
		seen[id] = true
		if sum+size[id] > bound {
			break
		}
		want, sum = append(want, id), sum+size[id]
	}
	if got := kept(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v (bound %d, sizes %v); want %v", got, bound, size, want)
	}
	if n, b := c.CacheStats(); n != len(want) || b != sum {
		t.Errorf("CacheStats = %d fits, %d bytes; want %d, %d", n, b, len(want), sum)
	}

	// ids[2] was dropped: asking again refits it and answers the same.
	again := fits.Load()
	second, err := c.Decode(ctx, Selection{RunID: ids[1]}, q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("after a refit %s answered %+v; before, %+v", ids[1], second.Result, first.Result)
	}
	if _, err := c.modelWithin(ctx, -1, ids[2]); err != nil {
		t.Fatal(err)
	}
	if fits.Load() != again+1 {
		t.Errorf("%d fits for a kept run and a dropped one; want 1", fits.Load()-again)
	}

	c.Forget(ids[2])
	for _, key := range kept(t, c) {
		if key == ids[2] {
			t.Errorf("%s is kept after Forget", ids[2])
		}
	}
}

// TestFitLargerThanTheBoundIsAnswered: a fit that alone holds more than
// the bound answers its callers and is not kept; each answer refits it.
func TestFitLargerThanTheBoundIsAnswered(t *testing.T) {
	ctx := context.Background()
	st, ids := storeOf(t, fittable(t, storetest.Runs(3, 4), 1))
	var fits atomic.Int64
	c := patient(st, 1000, func(time.Duration) { fits.Add(1) })
	for range 2 {
		if _, err := c.Decode(ctx, Selection{RunID: ids[0]}, calculator.Query{ContextTokens: 0, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := c.CacheStats(); n != 0 || b != 0 || len(c.fits) != 0 {
		t.Errorf("a fit over the bound is kept: %d fits, %d bytes, %d entries", n, b, len(c.fits))
	}
	if fits.Load() != 2 {
		t.Errorf("%d fits for two answers; want 2", fits.Load())
	}
}

// TestFitBeingMadeIsNotEvicted: a fit not yet done holds no bytes and is
// never dropped to make room, so its callers and later ones share it.
func TestFitBeingMadeIsNotEvicted(t *testing.T) {
	ctx := context.Background()
	st, ids := storeOf(t, fittable(t, storetest.Runs(3, 8), 3))
	all := patient(st, DefaultCacheBytes, nil)
	var largest int64
	for _, id := range ids {
		if _, err := all.modelWithin(ctx, -1, id); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, all.fits[id].bytes)
	}
	c := patient(st, largest, nil) // room for one fit, or two small ones
	making := &fitCall{key: "making", done: make(chan struct{})}
	making.elem = c.lru.PushFront(making) // the least recently used, once the others come
	c.fits[making.key] = making
	for _, id := range ids {
		if _, err := c.modelWithin(ctx, -1, id); err != nil {
			t.Fatal(err)
		}
	}
	got := kept(t, c)
	if len(got) == 0 || len(got) == len(ids) || got[0] != ids[len(ids)-1] {
		t.Errorf("kept %v with room for %d bytes; want the last, %s, and not all", got, largest, ids[len(ids)-1])
	}
	if c.fits["making"] != making {
		t.Error("the fit being made was dropped to make room")
	}
}

// heap is the heap's spans in use, the bytes of its live objects and the
// process's resident memory, after a collection that returns what it freed
// to the system.
func heap(t *testing.T) (inUse, live, rss int64) {
	t.Helper()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb << 10
			}
		}
	}
	return int64(ms.HeapInuse), int64(ms.HeapAlloc), rss
}

// TestFitCacheMemoryStaysInBound fits 64 × 64 runs holding several times
// the bound between them: the heap grows by no more than the bound and a
// stated overhead, while holding every fit, as the cache did when it was
// bounded by entries alone, grows it several times over.
func TestFitCacheMemoryStaysInBound(t *testing.T) {
	if testing.Short() {
		t.Skip("fits 32 runs of 64 × 64 cells")
	}
	const bound = 12 << 20
	// overhead is what the heap holds beside the fits' Bytes: span
	// fragmentation and the runtime's own (Bytes is within 2% of the heap
	// held by fits, TestBytesMatchesTheHeap in calculator).
	const overhead = 4 << 20
	ctx := context.Background()
	st, ids := storeOf(t, fittable(t, storetest.Grids(17, 48, 64, 64), 32))
	c := patient(st, bound, nil)
	for _, id := range ids { // the store's connections and caches are not the fits'
		if _, err := st.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	before, liveBefore, rssBefore := heap(t)
	for _, id := range ids {
		c.Warm(id)
	}
	held := make([]*calculator.Model, len(ids)) // every fit, as if none were dropped
	var made int64
	for i, id := range ids {
		m, err := c.modelWithin(ctx, -1, id)
		if err != nil {
			t.Fatal(err)
		}
		held[i], made = m, made+m.Bytes()
	}
	all, liveAll, rssAll := heap(t)
	runtime.KeepAlive(held)
	held = nil
	bounded, liveBounded, rssBounded := heap(t)
	_, keptBytes := c.CacheStats()
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	t.Logf("%d fits of %.1f MB; bound %d MB, kept %.1f MB: heap in use grew %.1f MB (live %.1f, RSS %.1f); holding every fit, %.1f MB (live %.1f, RSS %.1f)",
		len(ids), mb(made), bound>>20, mb(keptBytes), mb(bounded-before), mb(liveBounded-liveBefore), mb(rssBounded-rssBefore),
		mb(all-before), mb(liveAll-liveBefore), mb(rssAll-rssBefore))
	if made < 3*bound {
		t.Fatalf("the fits hold %d bytes, not several times the bound %d: the test shows nothing", made, bound)
	}
	if keptBytes > bound {
		t.Errorf("the fits kept hold %d bytes, over the bound %d", keptBytes, bound)
	}
	if grew := bounded - before; grew > bound+overhead {
		t.Errorf("the heap grew %d bytes, over the bound %d and %d of overhead", grew, bound, overhead)
	}
	if grew := all - before; grew < 3*bound {
		t.Errorf("holding every fit the heap grew only %d bytes", grew)
	}
}
