package store_test

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestSeries: runs that differ only in engine version, date or a
// capacity-only setting are one series; a setting that changes speed
// starts another.
func TestSeries(t *testing.T) {
	forEachStore(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		base := storetest.Runs(71, 1)[0]
		base.Engine.Version = "0.9.0"
		v10 := base
		v10.Engine.Version = "0.10.0"
		v10.Decode = storetest.Scaled(base, func(int, int) float64 { return 1.05 }).Decode
		capacity := base
		capacity.Engine.Version = "0.11.0"
		util := 0.5
		capacity.Launch.GPUMemoryUtilization = &util
		capacity.Launch.Flags = maps.Clone(base.Launch.Flags)
		capacity.Launch.Flags["gpu-memory-utilization"] = "0.5"
		capacity.Decode = storetest.Scaled(base, func(int, int) float64 { return 1.07 }).Decode
		other := base
		other.Launch.KVCacheDtype = "bf16"
		other.Launch.Flags = maps.Clone(base.Launch.Flags)
		other.Launch.Flags["kv-cache-dtype"] = "bf16"
		other.Decode = storetest.Scaled(base, func(int, int) float64 { return 0.9 }).Decode
		stored, _, err := st.CreateRuns(ctx, []store.Run{base, v10, capacity, other})
		if err != nil {
			t.Fatal(err)
		}
		members, more, err := st.Series(ctx, stored[0].ID)
		if err != nil || more {
			t.Fatalf("Series: %v, more %v", err, more)
		}
		var ids []string
		for _, m := range members {
			ids = append(ids, m.ID)
		}
		slices.Sort(ids)
		want := []string{stored[0].ID, stored[1].ID, stored[2].ID}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("series of the 0.9.0 run: %v, want the three runs that differ in version and capacity only %v", ids, want)
		}
		if alone, _, _ := st.Series(ctx, stored[3].ID); len(alone) != 1 {
			t.Errorf("a run with another KV cache dtype shares a series with %d runs; want itself only", len(alone))
		}
		list, _, err := st.ListSeries(ctx, store.RunFilter{}, 10)
		if err != nil || len(list) != 1 || list[0].Runs != 3 {
			t.Errorf("ListSeries: %+v, %v; want the one series of 3 runs (a lone run is not a series)", list, err)
		}
		if _, _, err := st.Series(ctx, "nosuchrun"); err == nil {
			t.Error("the series of a run that does not exist")
		}
	})
}

// TestSeriesKeysAreFilledIn: a database whose runs have no series key
// (stored before it existed) gets them when opened.
func TestSeriesKeysAreFilledIn(t *testing.T) {
	ctx := context.Background()
	st, path := openTestDB(t)
	if _, _, err := st.CreateRuns(ctx, storetest.Runs(72, 3)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// One run without a key, one with a key of an older version, one
	// whose key sorts after this version's.
	for i, key := range []any{nil, "s2-old", "s9-new"} {
		if _, err := db.Exec("UPDATE runs SET series_key = ? WHERE id = (SELECT id FROM runs ORDER BY id LIMIT 1 OFFSET ?)", key, i); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err = store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	var missing int
	if err := db.QueryRow("SELECT count(*) FROM runs WHERE series_key IS NULL OR substr(series_key, 1, 3) <> 's3-'").Scan(&missing); err != nil || missing != 0 {
		t.Errorf("%d runs without a series key of this version after opening (%v)", missing, err)
	}
}

// TestSeriesKeyNewlyPrintedSetting: a setting a tool began to print at
// its old behaviour (llama-batched-bench's is_tg_separate = 0) keeps a
// run in the series of runs that do not print it; any other value starts
// another series.
func TestSeriesKeyNewlyPrintedSetting(t *testing.T) {
	old := storetest.Runs(72, 1)[0]
	old.Launch.Flags = map[string]string{"n_batch": "2048", "is_pp_shared": "0"}
	printed := old
	printed.Launch.Flags = maps.Clone(old.Launch.Flags)
	printed.Launch.Flags["is_tg_separate"] = "0"
	separate := old
	separate.Launch.Flags = maps.Clone(printed.Launch.Flags)
	separate.Launch.Flags["is_tg_separate"] = "1"
	if store.SeriesKey(printed) != store.SeriesKey(old) {
		t.Error("is_tg_separate = 0 starts a series of its own; want the series of runs that do not print it")
	}
	if store.SeriesKey(separate) == store.SeriesKey(old) {
		t.Error("is_tg_separate = 1 (another decode pattern) is in the series of runs that decode together")
	}
}
