package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storegen"
)

// stormReaders is how many reader addresses --write-storm uses
// (127.0.0.2 …), and stormReadRate how fast each reads: well under the
// default 100 requests a second per address, so that what is measured is
// the writer's effect, not the read limit.
const (
	stormReaders  = 4
	stormReadRate = 20
	stormWrites   = 3 // a second, under the default 5 per key
)

// readerCount is what one reader got in one phase.
type readerCount struct {
	ok, limited int
	other       map[string]int // by path and status
	plannerLat  []time.Duration
	lat         map[string][]time.Duration // by path
}

// writeStorm measures whether one API key editing its own run's title
// three times a second (within the default write limit) starves readers:
// the server runs with its default limits; four readers, each from an
// address of its own, read a mix of expensive and cheap answers for dur
// without the writer, then for dur with it.
func writeStorm(ctx context.Context, bin, db string, dur time.Duration, stdout, stderr io.Writer) error {
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		return err
	}
	name := "loadbench-writer-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, token, err := st.CreateKey(ctx, name, false)
	st.Close()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	srv := exec.CommandContext(ctx, bin, "--addr", "127.0.0.1:"+strconv.Itoa(port), "--db", db, "--no-seed")
	srv.Stdout, srv.Stderr = io.Discard, io.Discard
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if err := waitReady(base, 30*time.Second); err != nil {
		return err
	}

	// The writer's own run, new in every invocation: a generated one whose
	// page answers (some generated runs have no cell a page can predict
	// from).
	writer := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 10)}, Timeout: 5 * time.Second}).DialContext}}
	var runID string
	for seed := uint64(time.Now().UnixNano()); runID == ""; seed++ {
		r := storegen.Runs(seed, 1)[0]
		r.ID, r.SubmittedBy, r.CreatedAt, r.Trust = "", "", time.Time{}, nil
		body, err := json.Marshal(r)
		if err != nil {
			return err
		}
		req, _ := http.NewRequest("POST", base+"/v1/runs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := writer.Do(req)
		if err != nil {
			return err
		}
		var created struct {
			ID string `json:"id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("the writer's run: %d %v", resp.StatusCode, err)
		}
		if code, err := get(writer, base+"/runs/"+created.ID); err == nil && code == http.StatusOK {
			runID = created.ID
		}
	}

	mix := []string{
		"/v1/planner?context_tokens=16384&min_per_request_tok_s=30&users=200",
		"/v1/leaderboard?context_tokens=20000&concurrency=6&predicted=true",
		"/feeds/regressions.atom",
		"/v1/runs?limit=20",
		"/runs/" + runID,
	}
	readers := make([]*http.Client, stormReaders)
	for i := range readers {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		readers[i] = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			DialContext: (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).DialContext}}
		defer readers[i].CloseIdleConnections()
	}
	// Every answer computed once before the baseline, so both phases
	// start from a warm cache.
	for _, p := range mix {
		if _, err := get(readers[0], base+p); err != nil {
			return err
		}
	}

	phase := func(withWriter bool) ([]readerCount, map[int]int) {
		counts := make([]readerCount, stormReaders)
		writes := map[int]int{}
		deadline := time.Now().Add(dur)
		var wg sync.WaitGroup
		for i, c := range readers {
			wg.Go(func() {
				tick := time.NewTicker(time.Second / stormReadRate)
				defer tick.Stop()
				for n := i; time.Now().Before(deadline); n++ {
					p := mix[n%len(mix)]
					t := time.Now()
					code, err := get(c, base+p)
					switch {
					case err == nil && code == http.StatusOK:
						counts[i].ok++
					case code == http.StatusTooManyRequests:
						counts[i].limited++
					default:
						if counts[i].other == nil {
							counts[i].other = map[string]int{}
						}
						counts[i].other[fmt.Sprintf("%s %d %v", p, code, err)]++
					}
					if counts[i].lat == nil {
						counts[i].lat = map[string][]time.Duration{}
					}
					counts[i].lat[p] = append(counts[i].lat[p], time.Since(t))
					if p == mix[0] {
						counts[i].plannerLat = append(counts[i].plannerLat, time.Since(t))
					}
					<-tick.C
				}
			})
		}
		if withWriter {
			wg.Go(func() {
				tick := time.NewTicker(time.Second / stormWrites)
				defer tick.Stop()
				for n := 0; time.Now().Before(deadline); n++ {
					body := fmt.Sprintf(`{"title":"write storm %d"}`, n)
					req, _ := http.NewRequest("PATCH", base+"/v1/runs/"+runID, bytes.NewReader([]byte(body)))
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/merge-patch+json")
					code := -1
					if resp, err := writer.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = resp.StatusCode
					}
					writes[code]++
					<-tick.C
				}
			})
		}
		wg.Wait()
		return counts, writes
	}
	fmt.Fprintf(stderr, "write storm: baseline, %d readers for %v\n", stormReaders, dur)
	without, _ := phase(false)
	fmt.Fprintf(stderr, "write storm: with the writer (%d PATCH a second)\n", stormWrites)
	with, writes := phase(true)

	fmt.Fprintf(stdout, "matrixd, default limits: %d readers (127.0.0.2–%d, %d requests a second each: plan, predicted leaderboard, regressions feed, run list, the writer's run page) for %v without, then with, one API key editing its run's title %d times a second\n\n",
		stormReaders, 1+stormReaders, stormReadRate, dur, stormWrites)
	fmt.Fprintf(stdout, "| reader | answers without the writer | with it | ratio | 429 without / with | other errors | planner p50 without / with |\n|---|---|---|---|---|---|---|\n")
	for i := range stormReaders {
		a, b := without[i], with[i]
		fmt.Fprintf(stdout, "| 127.0.0.%d | %d | %d | %.2f | %d / %d | %d | %s / %s |\n", 2+i, a.ok, b.ok, float64(b.ok)/float64(max(1, a.ok)),
			a.limited, b.limited, len(a.other)+len(b.other), ms(median(a.plannerLat)), ms(median(b.plannerLat)))
		for p, l := range b.lat {
			fmt.Fprintf(stderr, "reader %d with the writer: %s p50 %s max %s\n", 2+i, p, ms(median(l)), ms(slices.Max(l)))
		}
		for what, n := range a.other {
			fmt.Fprintf(stderr, "reader %d without the writer: %d × %s\n", 2+i, n, what)
		}
		for what, n := range b.other {
			fmt.Fprintf(stderr, "reader %d with the writer: %d × %s\n", 2+i, n, what)
		}
	}
	fmt.Fprintf(stdout, "\nwriter: %v (status × count)\n", writes)
	return nil
}

// get asks u and reads the answer whole.
func get(c *http.Client, u string) (int, error) {
	resp, err := c.Get(u)
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
