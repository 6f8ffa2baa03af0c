package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCrashLosesNoAcknowledgedWrite runs the real server binary under
// concurrent writes and kills it with SIGKILL amid them (as one of its
// first 64 writes is sent), 20 times. After each kill, every write that
// was answered 2xx is stored and whole, and the database passes PRAGMA
// integrity_check.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "matrixd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "matrixd.db")
	var keyOut bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--db", db, "--name", "crash"}, env(nil), nil, &keyOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(keyOut.String()), "\n")
	token := lines[len(lines)-1]

	rng := rand.New(rand.NewPCG(1, 2))
	sent := map[string]store.Run{} // acknowledged: id → what was sent
	total := 0
	for round := range 20 {
		acked, n := crashRound(t, bin, db, token, uint64(round+100), 4+rng.IntN(60))
		total += n
		for id, r := range acked {
			sent[id] = r
		}
		checkAfterCrash(t, db, sent)
		if t.Failed() {
			t.Fatalf("round %d failed", round+1)
		}
	}
	if len(sent) < 20 {
		t.Fatalf("only %d writes were acknowledged in 20 rounds; the test did not exercise the server", len(sent))
	}
	t.Logf("%d acknowledged writes of %d sent survived 20 kills", len(sent), total)
}

// crashRound starts the server, writes from 4 clients until it is killed
// as the k-th write is sent (the 4 clients' writes in flight), and returns
// the runs it acknowledged. A count, not a time, picks the moment, so the
// kill lands amid writes however slow the machine.
func crashRound(t *testing.T, bin, db, token string, seed uint64, k int) (map[string]store.Run, int) {
	t.Helper()
	in := startInstance(t, bin, db)
	cmd, base := in.cmd, in.base

	runs := apart(storetest.Runs(seed, 400))
	var (
		mu    sync.Mutex
		acked = map[string]store.Run{}
		next  int
		wg    sync.WaitGroup
		kill  = make(chan struct{})
	)
	client := &http.Client{Timeout: 30 * time.Second} // a hang guard: a write killed mid-way errs at once
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i == k {
					close(kill)
				}
				if i >= len(runs) {
					return
				}
				body, _ := json.Marshal(runs[i])
				req, _ := http.NewRequest("POST", base+"/v1/runs", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return // killed
				}
				var got struct{ ID string }
				err = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				if err == nil && resp.StatusCode/100 == 2 {
					mu.Lock()
					acked[got.ID] = runs[i]
					mu.Unlock()
				}
			}
		})
	}
	sent := make(chan struct{})
	go func() { wg.Wait(); close(sent) }()
	select {
	case <-kill:
	case <-sent: // every client stopped before the k-th write (a write failed)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	wg.Wait()
	return acked, min(next, len(runs))
}

// checkAfterCrash opens the database as a restart would and holds every
// acknowledged run to what was sent.
func checkAfterCrash(t *testing.T, db string, sent map[string]store.Run) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer st.Close()
	for id, want := range sent {
		got, err := st.Run(ctx, id)
		if err != nil {
			t.Errorf("acknowledged run %s: %v", id, err)
			continue
		}
		want.Prefill, want.Decode = slices.Clone(want.Prefill), slices.Clone(want.Decode)
		want.Normalize()
		if !reflect.DeepEqual(got.Decode, want.Decode) || !reflect.DeepEqual(got.Prefill, want.Prefill) || got.Title != want.Title {
			t.Errorf("acknowledged run %s is not whole: %d decode, %d prefill cells, want %d, %d", id, len(got.Decode), len(got.Prefill), len(want.Decode), len(want.Prefill))
		}
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var res string
	if err := conn.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Errorf("integrity_check = %q, %v", res, err)
	}
	var stray int
	if err := conn.QueryRow(`SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM decode_cells d WHERE d.run_id = r.id)
		AND NOT EXISTS (SELECT 1 FROM prefill_cells p WHERE p.run_id = r.id)`).Scan(&stray); err != nil || stray != 0 {
		t.Errorf("%d runs stored without any cell (half-written), %v", stray, err)
	}
}

// apart gives each run a model and GPU name of its own, so that no write
// has related runs to be judged against: these tests are of durability,
// and a write's cost here is the write's, not its corroboration's (which
// assess's BenchmarkSubmitCrowdedModel measures).
func apart(runs []store.Run) []store.Run {
	for i := range runs {
		runs[i].Model.Name = fmt.Sprintf("%s-%d", runs[i].Model.Name, i)
		runs[i].Hardware.GPU = fmt.Sprintf("%s-%d", runs[i].Hardware.GPU, i)
	}
	return runs
}
