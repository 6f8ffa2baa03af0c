package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hammerResult is what one configuration of the server did while
// hammering clients asked it distinct uncached planner questions.
type hammerResult struct {
	config             string
	idleP50, loadedP50 time.Duration
	loadedP99          time.Duration
	statuses           map[int]int
	cores              float64
}

// hammer measures the cost limit: the server is started with its default
// limits, then with the cost limit off; each time a fifth client's
// /healthz latency is measured idle, then while four clients, each from
// an address of its own on the loopback network, keep asking distinct
// planner questions with include_scaled=true.
func hammer(ctx context.Context, bin, db string, clients int, dur time.Duration, stdout, stderr io.Writer) error {
	configs := []struct {
		name string
		args []string
	}{
		{"default limits (--cost-limit 0.25)", nil},
		{"cost limit off (--cost-limit 0)", []string{"--cost-limit", "0"}},
	}
	var results []hammerResult
	for _, c := range configs {
		port, err := freePort()
		if err != nil {
			return err
		}
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		srv := exec.CommandContext(ctx, bin, append([]string{"--addr", "127.0.0.1:" + strconv.Itoa(port), "--db", db, "--no-seed"}, c.args...)...)
		srv.Stdout, srv.Stderr = io.Discard, io.Discard
		if err := srv.Start(); err != nil {
			return err
		}
		r, err := hammerOne(base, srv.Process.Pid, clients, dur)
		srv.Process.Kill()
		srv.Wait()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		r.config = c.name
		results = append(results, r)
		fmt.Fprintf(stderr, "%s: healthz p50 %s idle, %s loaded; hammering answers %v; %.2f cores\n", c.name, ms(r.idleP50), ms(r.loadedP50), r.statuses, r.cores)
	}
	fmt.Fprintf(stdout, "matrixd under %d clients asking distinct uncached planner questions (include_scaled=true), each from its own loopback address, %v; a fifth client asks /healthz one request at a time\n\n", clients, dur)
	fmt.Fprintf(stdout, "| server | /healthz p50 idle | p50 loaded | loaded ÷ idle | p99 loaded | hammering clients' answers | server CPU |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		var parts []string
		for _, code := range slices.Sorted(func(yield func(int) bool) {
			for k := range r.statuses {
				if !yield(k) {
					return
				}
			}
		}) {
			parts = append(parts, fmt.Sprintf("%d × %d", r.statuses[code], code))
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %.2f | %s | %s | %.2f cores |\n", r.config, ms(r.idleP50), ms(r.loadedP50),
			float64(r.loadedP50)/float64(r.idleP50), ms(r.loadedP99), strings.Join(parts, ", "), r.cores)
	}
	return nil
}

func hammerOne(base string, pid, clients int, dur time.Duration) (hammerResult, error) {
	if err := waitReady(base, 30*time.Second); err != nil {
		return hammerResult{}, err
	}
	probe := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer probe.CloseIdleConnections()
	healthz := func(d time.Duration) ([]time.Duration, error) {
		var lats []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end); {
			t := time.Now()
			resp, err := probe.Get(base + "/healthz")
			if err != nil {
				return nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lats = append(lats, time.Since(t))
			time.Sleep(5 * time.Millisecond)
		}
		slices.Sort(lats)
		return lats, nil
	}
	idle, err := healthz(3 * time.Second)
	if err != nil {
		return hammerResult{}, err
	}
	cpu0, err := cpuSeconds(pid)
	if err != nil {
		return hammerResult{}, err
	}
	t0 := time.Now()
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(dur)
	for i := range clients {
		// Each client dials from an address of its own, as separate
		// machines would; 127.0.0.0/8 is all loopback.
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		tr := &http.Transport{DisableCompression: true, MaxConnsPerHost: 2,
			DialContext: (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).DialContext}
		client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					mu.Lock()
					q := fmt.Sprintf("/v1/planner?context_tokens=%d&min_per_request_tok_s=%.2f&users=%d&include_scaled=true",
						rng.IntN(120000), 1+rng.Float64()*40, 1+rng.IntN(64))
					mu.Unlock()
					resp, err := client.Get(base + q)
					code := -1
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = resp.StatusCode
					}
					mu.Lock()
					statuses[code]++
					mu.Unlock()
				}
			})
		}
		defer tr.CloseIdleConnections()
	}
	time.Sleep(time.Second) // let the load build up
	loaded, err := healthz(dur - 2*time.Second)
	wg.Wait()
	if err != nil {
		return hammerResult{}, err
	}
	cpu1, err := cpuSeconds(pid)
	if err != nil {
		return hammerResult{}, err
	}
	return hammerResult{idleP50: idle[len(idle)/2], loadedP50: loaded[len(loaded)/2], loadedP99: loaded[len(loaded)*99/100],
		statuses: statuses, cores: (cpu1 - cpu0) / time.Since(t0).Seconds()}, nil
}

// cpuSeconds is the CPU time process pid has used, from /proc.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces) are space separated;
	// utime and stime are the 14th and 15th of the whole line.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}
