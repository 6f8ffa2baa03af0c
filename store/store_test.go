package store_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// forEachStore runs a conformance test on every store: SQLite always, and
// PostgreSQL when MATRIXD_TEST_POSTGRES names a server (each test in a
// schema of its own, dropped after).
func forEachStore(t *testing.T, test func(t *testing.T, st *store.Store)) {
	t.Helper()
	forEachBackend(t, func(t *testing.T, backend string) { test(t, openStore(t, backend, store.Options{})) })
}

// forEachBackend runs test once per backend: "sqlite", and "postgres" when
// MATRIXD_TEST_POSTGRES is set.
func forEachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { test(t, "sqlite") })
	if os.Getenv("MATRIXD_TEST_POSTGRES") != "" {
		t.Run("postgres", func(t *testing.T) { test(t, "postgres") })
	}
}

// openStore opens an empty store of a backend.
func openStore(t *testing.T, backend string, opts store.Options) *store.Store {
	t.Helper()
	if backend == "postgres" {
		return storetest.Postgres(t, os.Getenv("MATRIXD_TEST_POSTGRES"), opts)
	}
	st, _ := openTestDBWith(t, opts)
	return st
}

func openTestDB(t testing.TB) (*store.Store, string) {
	return openTestDBWith(t, store.Options{})
}

func openTestDBWith(t testing.TB, opts store.Options) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "matrixd.db")
	st, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func TestCreateRunRoundTripsAndIsIdempotent(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		in := storetest.Runs(7, 1)[0]
		in.SourceURL = "https://example.org/run/1"
		in.Launch.Notes = []string{"first note", "second note"}
		in.Launch.EnablePrefixCaching = ptr(false)

		got, created, err := st.CreateRun(ctx, in)
		if err != nil || !created {
			t.Fatalf("CreateRun = created %v, err %v", created, err)
		}
		if got.ID == "" || got.CreatedAt.IsZero() {
			t.Fatalf("stored run lacks id or created_at: %q %v", got.ID, got.CreatedAt)
		}
		read, err := st.Run(ctx, got.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.Normalize()
		want.ID, want.CreatedAt = got.ID, got.CreatedAt
		m := in.MethodOf() // stored with every run: the one its benchmark text names
		want.Method = &m
		if !reflect.DeepEqual(read, want) {
			t.Errorf("read back differs:\n got %+v\nwant %+v", read, want)
		}

		again, created, err := st.CreateRun(ctx, in)
		if err != nil || created || again.ID != got.ID {
			t.Fatalf("second CreateRun = id %s created %v err %v; want id %s, not created", again.ID, created, err, got.ID)
		}
		if n, _ := st.CountRuns(ctx); n != 1 {
			t.Errorf("CountRuns = %d after storing the same content twice, want 1", n)
		}
	})
}

func TestCreateRunsRejectsInvalidAndStoresNothing(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(*store.Run)
		want   string
	}{
		{"no title", func(r *store.Run) { r.Title = " " }, "/title"},
		{"no model", func(r *store.Run) { r.Model.Name = "" }, "/model/name"},
		{"bad status", func(r *store.Run) { r.Decode[3].Status = "great" }, "/decode/3/status"},
		{"repeated cell", func(r *store.Run) { r.Decode[1] = r.Decode[0] }, "/decode/1"},
		{"negative value", func(r *store.Run) { r.Decode[0].TotalTokS = ptr(-1.0) }, "/decode/0/total_tok_s"},
		{"zero concurrency", func(r *store.Run) { r.Decode[0].Concurrency = 0 }, "/decode/0/concurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := openTestDB(t)
			runs := storetest.Runs(3, 3)
			tt.break_(&runs[2])
			_, _, err := st.CreateRuns(context.Background(), runs)
			var ve *store.ValidationError
			if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &ve) || ve.Problems[0].Pointer != tt.want {
				t.Fatalf("err = %v, want a ValidationError at %s", err, tt.want)
			}
			if n, _ := st.CountRuns(context.Background()); n != 0 {
				t.Errorf("%d runs stored after a rejected batch, want 0", n)
			}
		})
	}
}

func TestRunNotFound(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		if _, err := st.Run(ctx, "rnope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Run = %v, want ErrNotFound", err)
		}
		if _, err := st.DecodeCells(ctx, "rnope", store.DecodeFilter{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DecodeCells = %v, want ErrNotFound", err)
		}
		if _, err := st.PrefillCells(ctx, "rnope", store.PrefillFilter{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PrefillCells = %v, want ErrNotFound", err)
		}
	})
}

func seeded(t *testing.T, backend string, n int) (*store.Store, []store.Run) {
	t.Helper()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Every other run shares its predecessor's created_at, so ties are
	// broken by id.
	calls := 0
	st := openStore(t, backend, store.Options{Now: func() time.Time {
		calls++
		if calls%2 == 0 {
			clock = clock.Add(time.Minute)
		}
		return clock
	}})
	var stored []store.Run
	for _, r := range storetest.Runs(11, n) {
		s, _, err := st.CreateRun(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, s)
	}
	return st, stored
}

func TestListRunsPagesThroughEverySortOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st, runs := seeded(t, backend, 57)
		ctx := context.Background()
		for _, sort := range []string{store.SortCreatedDesc, store.SortCreated, store.SortGPU, store.SortModel, store.SortPeakDesc} {
			t.Run(sort, func(t *testing.T) {
				var all []store.RunSummary
				cursor := ""
				for page := 0; ; page++ {
					got, next, err := st.ListRuns(ctx, store.RunFilter{}, sort, 10, cursor)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, got...)
					if next == "" {
						break
					}
					if page > 10 {
						t.Fatal("pagination does not end")
					}
					cursor = next
				}
				if len(all) != len(runs) {
					t.Fatalf("paged through %d runs, want %d", len(all), len(runs))
				}
				seen := map[string]bool{}
				for i, s := range all {
					if seen[s.ID] {
						t.Fatalf("run %s listed twice", s.ID)
					}
					seen[s.ID] = true
					if i == 0 {
						continue
					}
					prev := all[i-1]
					var c int
					switch sort {
					case store.SortCreatedDesc:
						c = -prev.CreatedAt.Compare(s.CreatedAt)
					case store.SortCreated:
						c = prev.CreatedAt.Compare(s.CreatedAt)
					case store.SortGPU:
						c = strings.Compare(strings.ToLower(prev.GPU), strings.ToLower(s.GPU))
					case store.SortModel:
						c = strings.Compare(strings.ToLower(prev.ModelName), strings.ToLower(s.ModelName))
					case store.SortPeakDesc:
						c = -cmpPeak(prev, s)
					}
					idOrder := strings.Compare(prev.ID, s.ID)
					if strings.HasPrefix(sort, "-") {
						idOrder = -idOrder
					}
					if c > 0 || (c == 0 && idOrder > 0) {
						t.Fatalf("%s: %s listed before %s", sort, prev.ID, s.ID)
					}
				}
			})
		}
	})
}

func cmpPeak(a, b store.RunSummary) int {
	pa, pb := -1.0, -1.0
	if a.Peak != nil {
		pa = a.Peak.TotalTokS
	}
	if b.Peak != nil {
		pb = b.Peak.TotalTokS
	}
	switch {
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}

func TestListRunsFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st, runs := seeded(t, backend, 80)
		ctx := context.Background()
		tests := []struct {
			name string
			f    store.RunFilter
			keep func(store.Run) bool
		}{
			{"gpu any case", store.RunFilter{GPU: "rtx 3090"}, func(r store.Run) bool { return r.Hardware.GPU == "RTX 3090" }},
			{"model substring", store.RunFilter{Model: "qwen3"}, func(r store.Run) bool { return strings.Contains(strings.ToLower(r.Model.Name), "qwen3") }},
			{"quantization", store.RunFilter{Quantization: "awq 4-BIT"}, func(r store.Run) bool { return r.Model.Quantization == "AWQ 4-bit" }},
			{"engine version", store.RunFilter{EngineVersion: "0.32.0"}, func(r store.Run) bool { return r.Engine.Version == "0.32.0" }},
			{"kv dtype", store.RunFilter{KVCacheDtype: "FP8"}, func(r store.Run) bool { return r.Launch.KVCacheDtype == "fp8" }},
			{"submitter", store.RunFilter{Submitter: "Alice"}, func(r store.Run) bool { return r.Submitter == "alice" }},
			{"vram range", store.RunFilter{VRAMGBMin: ptr(20.0), VRAMGBMax: ptr(40.0)}, func(r store.Run) bool { return *r.Hardware.VRAMGB >= 20 && *r.Hardware.VRAMGB <= 40 }},
			{"engine and gpu", store.RunFilter{Engine: "VLLM", GPU: "H100"}, func(r store.Run) bool { return r.Hardware.GPU == "H100" }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, _, err := st.ListRuns(ctx, tt.f, store.SortCreated, 200, "")
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, r := range runs {
					if tt.keep(r) {
						want = append(want, r.ID)
					}
				}
				var ids []string
				for _, s := range got {
					ids = append(ids, s.ID)
				}
				if len(want) == 0 || len(want) == len(runs) {
					t.Fatalf("filter keeps %d of %d generated runs: the test data does not exercise it", len(want), len(runs))
				}
				slices.Sort(ids)
				slices.Sort(want)
				if !slices.Equal(ids, want) {
					t.Errorf("got %d runs %v, want %d %v", len(ids), ids, len(want), want)
				}
			})
		}
	})
}

func TestListRunsRejectsForeignCursor(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st, _ := seeded(t, backend, 5)
		ctx := context.Background()
		_, next, err := st.ListRuns(ctx, store.RunFilter{}, store.SortGPU, 2, "")
		if err != nil || next == "" {
			t.Fatal(next, err)
		}
		for _, c := range []string{"garbage!", "e30", next} {
			_, _, err := st.ListRuns(ctx, store.RunFilter{}, store.SortModel, 2, c)
			var fe *store.FieldError
			if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "cursor" {
				t.Errorf("cursor %q with another sort: err = %v, want an invalid cursor", c, err)
			}
		}
		if _, _, err := st.ListRuns(ctx, store.RunFilter{GPU: "H100"}, store.SortGPU, 2, next); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("cursor with another filter: err = %v, want ErrInvalid", err)
		}
	})
}

func TestLeaderboardRanksValidCells(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st, runs := seeded(t, backend, 60)
		ctx := context.Background()
		const l, b = 16 << 10, 4
		for _, metric := range []string{store.MetricTotalTokS, store.MetricTBTMs} {
			t.Run(metric, func(t *testing.T) {
				var entries []store.LeaderboardEntry
				cursor := ""
				for {
					got, next, err := st.Leaderboard(ctx, store.LeaderboardQuery{ContextTokens: l, Concurrency: b, Metric: metric, Limit: 7, Cursor: cursor})
					if err != nil {
						t.Fatal(err)
					}
					entries = append(entries, got...)
					if next == "" {
						break
					}
					cursor = next
				}
				var want []float64
				for _, r := range runs {
					for _, c := range r.Decode {
						if c.ContextTokens == l && c.Concurrency == b && c.Status == store.StatusValid {
							if metric == store.MetricTotalTokS {
								want = append(want, *c.TotalTokS)
							} else {
								want = append(want, *c.TBTMs)
							}
						}
					}
				}
				slices.Sort(want)
				if metric == store.MetricTotalTokS {
					slices.Reverse(want)
				}
				if len(entries) != len(want) || len(want) < 10 {
					t.Fatalf("%d entries, want %d (≥ 10)", len(entries), len(want))
				}
				for i, e := range entries {
					if e.Value != want[i] {
						t.Fatalf("entry %d value %v, want %v", i, e.Value, want[i])
					}
					wantRank := i + 1
					if i > 0 && e.Value == entries[i-1].Value {
						wantRank = entries[i-1].Rank
					}
					if e.Rank != wantRank {
						t.Fatalf("entry %d rank %d, want %d", i, e.Rank, wantRank)
					}
					if e.Cell.Status != store.StatusValid || e.Cell.ContextTokens != l || e.Cell.Concurrency != b {
						t.Fatalf("entry %d cell %+v is not the valid cell asked for", i, e.Cell)
					}
				}
			})
		}
	})
}

func TestCatalogsCountRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st, runs := seeded(t, backend, 40)
		ctx := context.Background()
		gpus, err := st.GPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, r := range runs {
			want[r.Hardware.GPU]++
		}
		got := map[string]int{}
		for _, g := range gpus {
			got[g.GPU] = g.RunCount
			if len(g.VRAMGB) == 0 {
				t.Errorf("%s has no VRAM sizes", g.GPU)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GPUs = %v, want %v", got, want)
		}
		engines, err := st.Engines(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, e := range engines {
			total += e.RunCount
		}
		models, err := st.Models(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mtotal := 0
		for _, m := range models {
			mtotal += m.RunCount
		}
		if total != len(runs) || mtotal != len(runs) {
			t.Errorf("engines count %d runs, models %d, want %d each", total, mtotal, len(runs))
		}
	})
}

// TestEnginesIgnoreCase: runs of "vLLM" and "vllm" at one version are one
// engine (filters already ignore case), on both backends.
func TestEnginesIgnoreCase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		st := openStore(t, backend, store.Options{})
		ctx := context.Background()
		for i, name := range []string{"vLLM", "vllm", "SGLang"} {
			r := storetest.Runs(uint64(20+i), 1)[0]
			r.Engine.Name, r.Engine.Version = name, "0.11.0"
			if _, _, err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		engines, err := st.Engines(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, e := range engines {
			got[e.Engine+" "+e.Version] = e.RunCount
		}
		if want := map[string]int{"vLLM 0.11.0": 2, "SGLang 0.11.0": 1}; !reflect.DeepEqual(got, want) {
			t.Errorf("engines %v, want %v", got, want)
		}
	})
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	_, path := openTestDB(t)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = store.Open(context.Background(), path, store.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on a newer schema: err = %v, want a refusal", err)
	}
}

func TestOpenRejectsMemory(t *testing.T) {
	if _, err := store.Open(context.Background(), ":memory:", store.Options{}); err == nil {
		t.Fatal("Open(:memory:) succeeded; two pools would see two databases")
	}
}

// TestConcurrentWritersAndReaders runs with -race in CI: writers never fail
// with SQLITE_BUSY and readers see only whole runs.
func TestConcurrentWritersAndReaders(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		runs := storetest.Runs(99, 40)
		var wg sync.WaitGroup
		errc := make(chan error, 100)
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < len(runs); i += 4 {
					if _, _, err := st.CreateRun(ctx, runs[i]); err != nil {
						errc <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
			})
		}
		for range 4 {
			wg.Go(func() {
				for range 10 {
					list, _, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreatedDesc, 200, "")
					if err != nil {
						errc <- err
						return
					}
					for _, s := range list {
						r, err := st.Run(ctx, s.ID)
						if err != nil {
							errc <- err
							return
						}
						if len(r.Decode) != 40 {
							errc <- fmt.Errorf("run %s read with %d decode cells, want 40", s.ID, len(r.Decode))
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		if n, _ := st.CountRuns(ctx); n != len(runs) {
			t.Errorf("CountRuns = %d, want %d", n, len(runs))
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestMigrationRehashesRuns opens a database at schema version 1, whose
// content hashes covered the title, and checks that after migrating the
// same content is recognised as stored, and that the run got the method
// its benchmark text names and awaits its checks.
func TestMigrationRehashesRuns(t *testing.T) {
	ctx := context.Background()
	st, path := openTestDB(t)
	run := storetest.Runs(11, 1)[0]
	stored, _, err := st.CreateRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DROP INDEX runs_by_model_nocase", "ALTER TABLE runs DROP COLUMN corroboration_status", "ALTER TABLE runs DROP COLUMN corroboration", "ALTER TABLE runs DROP COLUMN disputed",
		"DROP TRIGGER runs_inserted_measured", "DROP TRIGGER runs_deleted_measured", "DROP TRIGGER runs_updated_measured",
		"ALTER TABLE runs DROP COLUMN publisher", "ALTER TABLE runs DROP COLUMN license", "ALTER TABLE runs DROP COLUMN retrieved_at",
		"DROP TABLE run_fits", "ALTER TABLE runs DROP COLUMN avg_power_w", "ALTER TABLE decode_cells DROP COLUMN avg_power_w",
		"DROP INDEX runs_by_trust_version", "ALTER TABLE runs DROP COLUMN method_class", "ALTER TABLE runs DROP COLUMN method_measurement_s",
		"ALTER TABLE runs DROP COLUMN method_output_tokens", "ALTER TABLE runs DROP COLUMN method_prefill", "ALTER TABLE runs DROP COLUMN trust_checks",
		"ALTER TABLE runs DROP COLUMN flagged", "ALTER TABLE runs DROP COLUMN trust_version",
		"DROP TABLE sources", "DROP TABLE signing_keys", "DROP TABLE run_flags", "DROP TABLE run_events", "DROP INDEX runs_by_source", "DROP INDEX runs_by_submitter",
		"DROP INDEX runs_catalog_gpu", "DROP INDEX runs_catalog_model", "DROP INDEX runs_catalog_engine",
		"ALTER TABLE runs DROP COLUMN source_sha256", "ALTER TABLE runs DROP COLUMN source_media_type", "ALTER TABLE runs DROP COLUMN source_format",
		"ALTER TABLE runs DROP COLUMN signed_by", "ALTER TABLE runs DROP COLUMN signature", "ALTER TABLE runs DROP COLUMN hidden_at",
		"ALTER TABLE runs DROP COLUMN hidden_by", "ALTER TABLE runs DROP COLUMN hidden_reason",
		"CREATE INDEX runs_catalog_gpu ON runs (gpu, vram_gb)", "CREATE INDEX runs_catalog_model ON runs (model_name)", "CREATE INDEX runs_catalog_engine ON runs (engine_name)",
		"DROP INDEX runs_by_series", "ALTER TABLE runs DROP COLUMN series_key",
		"DROP INDEX runs_by_submitted_by", "ALTER TABLE runs DROP COLUMN submitted_by", "ALTER TABLE runs DROP COLUMN notes",
		"DROP TABLE api_keys", "DROP TABLE idempotency_keys", "DROP TABLE data_version", "DROP TABLE secrets",
		"DROP INDEX runs_catalog_gpu", "DROP TABLE model_names", "DROP INDEX runs_by_model_created", "DROP INDEX runs_by_gpu_model", "DROP TRIGGER model_names_inserted", "DROP TRIGGER model_names_deleted", "DROP TRIGGER model_names_renamed", "DROP INDEX runs_catalog_model", "DROP INDEX runs_catalog_engine", "DROP INDEX runs_by_gpu_peak", "DROP INDEX runs_by_gpu_created",
		"DROP TRIGGER runs_inserted", "DROP TRIGGER runs_updated", "DROP TRIGGER runs_deleted", "UPDATE runs SET content_hash = 'a version 1 hash'", "PRAGMA user_version = 1",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	st, err = store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	again, created, err := st.CreateRun(ctx, run)
	if err != nil || created || again.ID != stored.ID {
		t.Fatalf("after migration CreateRun = %s created %v err %v; want the stored %s", again.ID, created, err, stored.ID)
	}
	if again.Method == nil || again.Method.Class != store.MethodSustainedDecode || again.Method.MeasurementS == nil || *again.Method.MeasurementS != 30 {
		t.Errorf("after migration the run's method is %+v, want sustained_decode measured for 30 s (its benchmark: fixed duration, 30 s)", again.Method)
	}
	if ids, err := st.RunsToCheck(ctx, 1, 10); err != nil || len(ids) != 1 || ids[0] != stored.ID {
		t.Errorf("RunsToCheck = %v, %v; want the migrated run, not checked yet", ids, err)
	}
	// Stating the method its text names is the same content: no new run.
	m := store.Method{Class: store.MethodSustainedDecode, MeasurementS: ptr(30.0), Prefill: store.PrefillExcluded}
	stated := run
	stated.Method = &m
	if again, created, err := st.CreateRun(ctx, stated); err != nil || created || again.ID != stored.ID {
		t.Errorf("the run with its default method stated = %s created %v err %v; want the stored %s", again.ID, created, err, stored.ID)
	}
	stated.Method = &store.Method{Class: store.MethodServingSweep}
	if again, created, err := st.CreateRun(ctx, stated); err != nil || !created || again.ID == stored.ID {
		t.Errorf("the run with another method = %s created %v err %v; want a new run", again.ID, created, err)
	}
}

// TestVersions: a write through the store shows in its versions at once,
// a read changes nothing, a change of a run's text bumps only the data
// version, a change that can move a measurement bumps both, and a write
// through another Store on the same database (the CLI, another instance)
// shows once VersionMaxAge has passed on the injected clock.
func TestVersions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		var clockMu sync.Mutex
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
		dsn := filepath.Join(t.TempDir(), "matrixd.db")
		if backend == "postgres" {
			dsn = storetest.PostgresSchema(t, os.Getenv("MATRIXD_TEST_POSTGRES"))
		}
		open := func() *store.Store {
			st, err := store.Open(ctx, dsn, store.Options{VersionClock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		st := open()
		versions := func() store.Versions {
			t.Helper()
			v, err := st.Versions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		v0 := versions()
		runs := storetest.Runs(12, 2)
		stored, _, err := st.CreateRun(ctx, runs[0])
		if err != nil {
			t.Fatal(err)
		}
		v1 := versions()
		if v1.Data <= v0.Data || v1.Measured <= v0.Measured {
			t.Fatalf("a new run: versions %+v → %+v; want both bumped", v0, v1)
		}
		if _, _, err := st.ListRuns(ctx, store.RunFilter{}, store.SortCreatedDesc, 10, ""); err != nil {
			t.Fatal(err)
		}
		if v := versions(); v != v1 {
			t.Errorf("a read changed the versions %+v → %+v", v1, v)
		}
		admin := store.Key{Name: "ops", Admin: true}
		last := v1
		for _, step := range []struct {
			name     string
			write    func() error
			measured bool
		}{
			{"title", func() error {
				_, err := st.UpdateRunMeta(ctx, stored.ID, store.MetaPatch{Title: ptr("another title")}, admin)
				return err
			}, false},
			{"notes", func() error {
				_, err := st.UpdateRunMeta(ctx, stored.ID, store.MetaPatch{Notes: ptr("a note")}, admin)
				return err
			}, false},
			{"flag", func() error {
				_, err := st.FlagRun(ctx, stored.ID, admin, store.FlagReasons[0], "looks odd")
				return err
			}, false},
			{"hide", func() error { _, err := st.HideRun(ctx, stored.ID, admin, "spam"); return err }, true},
			{"restore", func() error { _, err := st.RestoreRun(ctx, stored.ID, admin); return err }, true},
			{"delete", func() error { return st.DeleteRun(ctx, stored.ID, admin) }, true},
		} {
			if err := step.write(); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			v := versions()
			if v.Data <= last.Data || (v.Measured > last.Measured) != step.measured {
				t.Errorf("%s: versions %+v → %+v; want the data version bumped, the measured one bumped %v", step.name, last, v, step.measured)
			}
			last = v
		}

		other := open()
		if _, _, err := other.CreateRun(ctx, runs[1]); err != nil {
			t.Fatal(err)
		}
		if v := versions(); v != last {
			t.Errorf("another process's write showed before VersionMaxAge: %+v → %+v", last, v)
		}
		clockMu.Lock()
		now = now.Add(store.VersionMaxAge)
		clockMu.Unlock()
		if v := versions(); v.Data <= last.Data || v.Measured <= last.Measured {
			t.Errorf("a write through another process did not show after %v: %+v → %+v", store.VersionMaxAge, last, v)
		}
	})
}

// TestForgedCursorsAreRefused: a cursor edited by a client (a rank of
// -999), or issued by another database, is a 400 naming cursor.
func TestForgedCursorsAreRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		st := openStore(t, backend, store.Options{})
		if _, _, err := st.CreateRuns(ctx, storetest.Runs(13, 12)); err != nil {
			t.Fatal(err)
		}
		lq := store.LeaderboardQuery{ContextTokens: 0, Concurrency: 1, Metric: "total_tok_s", Limit: 3}
		_, next, err := st.Leaderboard(ctx, lq)
		if err != nil || next == "" {
			t.Fatalf("no next page: %v", err)
		}
		payload, mac, ok := strings.Cut(next, ".")
		if !ok {
			t.Fatalf("cursor %q has no signature", next)
		}
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		c["r"] = -999
		forged, _ := json.Marshal(c)
		other, _ := openTestDB(t)
		if _, _, err := other.CreateRuns(ctx, storetest.Runs(13, 12)); err != nil {
			t.Fatal(err)
		}
		for name, cur := range map[string]string{
			"forged rank":        base64.RawURLEncoding.EncodeToString(forged) + "." + mac,
			"no signature":       payload,
			"another database's": "",
			"garbage":            "%%%.###",
		} {
			st := st
			if name == "another database's" {
				st, cur = other, next
			}
			lq := lq
			lq.Cursor = cur
			var fe *store.FieldError
			if _, _, err := st.Leaderboard(ctx, lq); !errors.As(err, &fe) || fe.Field != "cursor" {
				t.Errorf("%s cursor: %v, want a FieldError on cursor", name, err)
			}
		}
		lq.Cursor = next
		if _, _, err := st.Leaderboard(ctx, lq); err != nil {
			t.Errorf("the issued cursor is refused: %v", err)
		}
	})
}

// TestModelFilterFollowsWrites: the model substring filter reads the
// distinct model names the triggers keep; it must see inserts and deletes,
// agree with a plain substring test, and match nothing cheaply.
func TestModelFilterFollowsWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		st := openStore(t, backend, store.Options{})
		runs := storetest.Runs(14, 60)
		if _, _, err := st.CreateRuns(ctx, runs); err != nil {
			t.Fatal(err)
		}
		count := func(f store.RunFilter) int {
			t.Helper()
			got, _, err := st.ListRuns(ctx, f, store.SortCreatedDesc, 200, "")
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		want := func(sub string) int {
			n := 0
			for _, r := range runs {
				if strings.Contains(strings.ToLower(r.Model.Name), strings.ToLower(sub)) {
					n++
				}
			}
			return n
		}
		for _, sub := range []string{runs[0].Model.Name, strings.ToUpper(runs[0].Model.Name[:3]), "a", "no such model"} {
			if got := count(store.RunFilter{Model: sub}); got != want(sub) {
				t.Errorf("model=%q lists %d runs, want %d", sub, got, want(sub))
			}
		}
		r := runs[0]
		r.Model.Name = "A brand-new model"
		stored, _, err := st.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := count(store.RunFilter{Model: "brand-new"}); got != 1 {
			t.Errorf("a new model's run: %d listed, want 1", got)
		}
		if err := st.DeleteRun(ctx, stored.ID, store.Key{Admin: true}); err != nil {
			t.Fatal(err)
		}
		if got := count(store.RunFilter{Model: "brand-new"}); got != 0 {
			t.Errorf("after deleting its only run: %d listed, want 0", got)
		}
	})
}

func TestCellAxes(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		contexts, _, _, err := st.CellAxes(ctx, 40000)
		if err != nil || contexts != nil {
			t.Fatalf("empty store: %v %v", contexts, err)
		}
		runs := storetest.Runs(5, 3)
		wantL := map[int]bool{}
		for _, r := range runs {
			if _, _, err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Decode {
				if c.Status == store.StatusValid {
					wantL[c.ContextTokens] = true
				}
			}
		}
		contexts, nearest, concurrencies, err := st.CellAxes(ctx, 40000)
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Sorted(maps.Keys(wantL)); !slices.Equal(contexts, want) {
			t.Errorf("contexts %v, want %v", contexts, want)
		}
		wantNear := contexts[0]
		for _, l := range contexts {
			if max(l-40000, 40000-l) < max(wantNear-40000, 40000-wantNear) {
				wantNear = l
			}
		}
		wantB := map[int]bool{}
		for _, r := range runs {
			for _, c := range r.Decode {
				if c.Status == store.StatusValid && c.ContextTokens == wantNear {
					wantB[c.Concurrency] = true
				}
			}
		}
		if nearest != wantNear || !slices.Equal(concurrencies, slices.Sorted(maps.Keys(wantB))) {
			t.Errorf("nearest %d with %v, want %d with %v", nearest, concurrencies, wantNear, slices.Sorted(maps.Keys(wantB)))
		}
	})
}

// TestPostgresSchemaChecks: a URL whose schema does not exist says so, and
// Existing refuses a schema matrixd has not set up instead of creating
// tables there.
func TestPostgresSchemaChecks(t *testing.T) {
	pg := os.Getenv("MATRIXD_TEST_POSTGRES")
	if pg == "" {
		t.Skip("MATRIXD_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	dsn := storetest.PostgresSchema(t, pg)
	if _, err := store.Open(ctx, dsn, store.Options{Existing: true}); err == nil || !strings.Contains(err.Error(), "no matrixd database in schema") {
		t.Errorf("Existing on an empty schema: %v", err)
	}
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err := store.Open(ctx, dsn, store.Options{Existing: true}); err != nil {
		t.Errorf("Existing on a set-up schema: %v", err)
	} else {
		st.Close()
	}
	missing := strings.Replace(dsn, "search_path=", "search_path=nope_", 1)
	if _, err := store.Open(ctx, missing, store.Options{}); err == nil || !strings.Contains(err.Error(), "does not exist: create it first") {
		t.Errorf("a schema that does not exist: %v", err)
	}
}

func TestGPUNames(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		want := map[string]bool{}
		for _, r := range storetest.Runs(9, 40) {
			if _, _, err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			want[r.Hardware.GPU] = true
		}
		got, err := st.GPUNames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got) // the database's collation orders them
		if !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
			t.Errorf("GPU names %v, want %v", got, slices.Sorted(maps.Keys(want)))
		}
	})
}

// TestCountRunsByClass: one pass counts the matching runs of each method
// class, whatever class the filter names, and keeps the filter's other
// terms.
func TestCountRunsByClass(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		runs := storetest.Runs(77, 5)
		for i := range runs {
			if i >= 3 {
				runs[i].Method = &store.Method{Class: store.MethodServingSweep}
			}
		}
		if _, _, err := st.CreateRuns(ctx, runs); err != nil {
			t.Fatal(err)
		}
		got, err := st.CountRunsByClass(ctx, store.RunFilter{MethodClass: store.MethodServingSweep})
		if err != nil {
			t.Fatal(err)
		}
		if got[store.MethodSustainedDecode] != 3 || got[store.MethodServingSweep] != 2 || len(got) != 2 {
			t.Errorf("counts %v, want 3 sustained_decode and 2 serving_sweep", got)
		}
		one, err := st.CountRunsByClass(ctx, store.RunFilter{GPU: runs[4].Hardware.GPU})
		if err != nil {
			t.Fatal(err)
		}
		for class, n := range one {
			g := store.RunFilter{GPU: runs[4].Hardware.GPU, MethodClass: class}
			if want, err := st.CountMatchingRuns(ctx, g); err != nil || n != want {
				t.Errorf("%s on %s: %d, want %d (%v)", class, runs[4].Hardware.GPU, n, want, err)
			}
		}
		if one[store.MethodServingSweep] < 1 {
			t.Errorf("counts on %s: %v, want the serving sweep stored on it", runs[4].Hardware.GPU, one)
		}
	})
}
