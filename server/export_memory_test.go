package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// exportMemoryBound is how much the heap in use may grow while the whole
// export is streamed, whatever the number of runs: a few pages of runs,
// their JSON, and the compressor's and the client's buffers.
const exportMemoryBound = 32 << 20

// TestExportMemory streams the export of many runs over real HTTP and
// checks every run comes, once, while the heap in use stays bounded:
// sampled every few hundred lines, it never grows by more than
// exportMemoryBound above where it started. The body is larger than the
// bound, so an answer built in memory (or kept by the response cache)
// fails. 4,000 runs by default; MATRIXD_TEST_EXPORT_RUNS=100000 (as
// .ci/run sets it) for the size the docs quote.
func TestExportMemory(t *testing.T) {
	n := 4000
	if v := os.Getenv("MATRIXD_TEST_EXPORT_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			t.Fatalf("MATRIXD_TEST_EXPORT_RUNS=%q: want a number of runs, at least 1000", v)
		}
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "matrixd.db")
	manyRuns(t, path, n)
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := server.New(st, server.Config{Calc: predict.New(st, predict.DefaultCacheBytes, nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for _, gzip := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gzip), func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+"/v1/runs.ndjson", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !gzip {
				req.Header.Set("Accept-Encoding", "identity") // else the transport asks for gzip and unzips
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base, peak, peakRSS := ms.HeapInuse, ms.HeapInuse, uint64(0)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if gzip != resp.Uncompressed {
				t.Fatalf("gzip %v, but the transport unzipped: %v", gzip, resp.Uncompressed)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			lines, bytes, last := 0, 0, ""
			for sc.Scan() {
				lines++
				bytes += len(sc.Bytes()) + 1
				id := idOf(sc.Bytes())
				if id <= last {
					t.Fatalf("line %d: id %q after %q: not in id order, or twice", lines, id, last)
				}
				last = id
				if lines%250 == 0 {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapInuse)
					peakRSS = max(peakRSS, rss())
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if lines != n {
				t.Fatalf("%d lines, want %d", lines, n)
			}
			growth := int64(peak) - int64(base)
			t.Logf("%d runs, %d MB of NDJSON: heap in use %d MB at the start, at most %d MB while streaming (+%d MB); resident %d MB at most",
				n, bytes>>20, base>>20, peak>>20, growth>>20, peakRSS>>20)
			if bytes <= exportMemoryBound {
				t.Fatalf("the export is %d bytes, no more than the bound: the test proves nothing", bytes)
			}
			if growth > exportMemoryBound {
				t.Errorf("the heap grew by %d MB while streaming, more than %d MB", growth>>20, exportMemoryBound>>20)
			}
		})
	}
}

// idOf is the id of a line of the export: the first field.
func idOf(line []byte) string {
	s := string(line)
	const key = `"id":"`
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	return s[:strings.IndexByte(s, '"')]
}

// rss is the process's resident memory now, from /proc (0 elsewhere).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// manyRuns fills the SQLite database at path with n runs quickly: 100
// generated runs stored (and checked) as any, then copied in SQL under new
// ids, cells and all, until there are n (copies of copies: the ids grow a
// letter a round).
func manyRuns(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	const base = 100
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := assess.New(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.CreateRuns(ctx, storetest.Runs(91, base)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(ON)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	columns := func(table string) []string {
		rows, err := db.Query("SELECT name FROM pragma_table_info(?)", table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	copyOf := func(table string, renamed map[string]string) string {
		cols := columns(table)
		sel := make([]string, len(cols))
		for i, c := range cols {
			sel[i] = c
			if r, ok := renamed[c]; ok {
				sel[i] = r
			}
		}
		return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s", table, strings.Join(cols, ", "), strings.Join(sel, ", "), table)
	}
	// Each round copies runs under a new suffix, doubling them until
	// the last round, which copies what is missing.
	pick := " WHERE %s IN (SELECT id FROM picked)"
	runs := copyOf("runs", map[string]string{"id": "id || ?1", "content_hash": "content_hash || ?1"}) + fmt.Sprintf(pick, "id")
	decode := copyOf("decode_cells", map[string]string{"run_id": "run_id || ?1"}) + fmt.Sprintf(pick, "run_id")
	prefill := copyOf("prefill_cells", map[string]string{"run_id": "run_id || ?1"}) + fmt.Sprintf(pick, "run_id")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for have, round := base, 0; have < n; have, round = have+min(have, n-have), round+1 {
		if _, err := tx.Exec("DROP TABLE IF EXISTS temp.picked"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("CREATE TEMP TABLE picked AS SELECT id FROM runs ORDER BY id LIMIT ?", min(have, n-have)); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{runs, decode, prefill} {
			if _, err := tx.Exec(q, string(rune('a'+round))); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
