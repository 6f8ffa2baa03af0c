package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// instance is a matrixd process serving a database.
type instance struct {
	cmd  *exec.Cmd
	base string
}

// startInstance starts bin on db with every limit off: the tests that use
// it send one client's load on purpose (the limits have tests of their own).
func startInstance(t *testing.T, bin, db string) *instance {
	t.Helper()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--db", db, "--no-seed", "--rate-limit", "0", "--write-rate-limit", "0", "--cost-limit", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("no listening line: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	in := &instance{cmd: cmd, base: strings.TrimSpace(strings.TrimPrefix(line, "matrixd listening on "))}
	t.Cleanup(func() { in.cmd.Process.Kill(); in.cmd.Wait() })
	return in
}

// get fetches a path and returns its status, ETag and body.
func get(t *testing.T, base, path string, header http.Header) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), b
}

// TestTwoInstancesOnPostgres runs two matrixd processes on one PostgreSQL
// database: writes go through both while one is killed with SIGKILL; every
// acknowledged write is stored exactly once; a write through one instance
// is visible through the other within a second (and its old ETag stops
// answering 304); after a restart both answer every list and leaderboard
// with the same bytes and ETags. It needs MATRIXD_TEST_POSTGRES (CI sets it).
func TestTwoInstancesOnPostgres(t *testing.T) {
	pg := os.Getenv("MATRIXD_TEST_POSTGRES")
	if pg == "" {
		t.Skip("MATRIXD_TEST_POSTGRES is not set: the two-instance test needs a PostgreSQL server")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "matrixd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := storetest.PostgresSchema(t, pg)
	var keyOut bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--db", db, "--name", "two"}, env(nil), nil, &keyOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(keyOut.String()), "\n")
	token := lines[len(lines)-1]
	a, b := startInstance(t, bin, db), startInstance(t, bin, db)

	post := func(base string, r store.Run) (string, int, error) {
		body, _ := json.Marshal(r)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/runs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req) // a hang guard, generous for a loaded machine
		if err != nil {
			return "", 0, err
		}
		defer resp.Body.Close()
		var got struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&got)
		return got.ID, resp.StatusCode, err
	}

	runs := apart(storetest.Runs(42, 600))
	var (
		mu       sync.Mutex
		acked    = map[string]int{}
		next     int
		throughB int
		wg       sync.WaitGroup
	)
	killed := make(chan struct{})
	bBusy := make(chan struct{}) // closed once b has acknowledged 30 writes
	for w := range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(runs) {
					return
				}
				base := a.base
				if w%2 == 1 {
					select {
					case <-killed:
					default:
						base = b.base // half the writers go through b until it dies
					}
				}
				id, code, err := post(base, runs[i])
				if err == nil && code/100 == 2 && base == b.base {
					mu.Lock()
					if throughB++; throughB == 30 {
						close(bBusy)
					}
					mu.Unlock()
				}
				if err != nil || code/100 != 2 {
					if base == b.base {
						id, code, err = post(a.base, runs[i]) // the balancer retries on the live instance
					}
					if err != nil || code/100 != 2 {
						continue
					}
				}
				mu.Lock()
				acked[id]++
				mu.Unlock()
			}
		})
	}
	<-bBusy
	b.cmd.Process.Kill() // SIGKILL mid-writes
	mu.Lock()
	sentAtKill := next
	mu.Unlock()
	b.cmd.Wait()
	close(killed)
	wg.Wait()
	if sentAtKill >= len(runs)-20 {
		t.Fatalf("b was killed after %d of %d writes: not mid-writes", sentAtKill, len(runs))
	}
	if len(acked) < 100 {
		t.Fatalf("only %d writes acknowledged", len(acked))
	}

	// Every acknowledged run is stored, each exactly once.
	seen := map[string]int{}
	cursor := ""
	for {
		path := "/v1/runs?limit=200&sort=created_at"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		code, _, body := get(t, a.base, path, nil)
		if code != 200 {
			t.Fatalf("list: %d %s", code, body)
		}
		var page struct {
			Items      []struct{ ID string }
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			seen[it.ID]++
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged run %s is listed %d times", id, seen[id])
		}
	}

	// A write through one instance shows through the other (once the
	// other's data version is read again, store.VersionMaxAge), and the
	// other's old ETag no longer answers 304.
	b = startInstance(t, bin, db)
	_, etag, _ := get(t, b.base, "/v1/runs?limit=5", nil)
	extra := storetest.Runs(43, 1)[0]
	id, code, err := post(a.base, extra)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("write through a: %d %v", code, err)
	}
	storetest.WaitFor(t, "the write through a visible through b, and b's old ETag stale", func() bool {
		code, _, _ := get(t, b.base, "/v1/runs/"+id, nil)
		changed, _, _ := get(t, b.base, "/v1/runs?limit=5", http.Header{"If-None-Match": {etag}})
		return code == 200 && changed == 200
	})

	// Both agree on lists and leaderboards, byte for byte.
	for _, path := range []string{
		"/v1/runs?limit=50", "/v1/runs?sort=-peak_total_tok_s&limit=50", "/v1/runs?gpu=RTX%203090",
		"/v1/leaderboard?context_tokens=16384&concurrency=4", "/v1/leaderboard?context_tokens=0&concurrency=1&metric=ttft_ms",
		"/v1/gpus", "/v1/models",
	} {
		ca, ea, ba := get(t, a.base, path, nil)
		cb, eb, bb := get(t, b.base, path, nil)
		if ca != 200 || cb != 200 || ea != eb || !bytes.Equal(ba, bb) {
			t.Errorf("%s: a answered %d %s, b %d %s", path, ca, ea, cb, eb)
		}
	}
	t.Logf("%d writes acknowledged through two instances (%d through b before its kill at write %d); %d runs stored", len(acked), throughB, sentAtKill, len(seen))
}
