// Command loadbench measures matrixd under load, as a client sees it: it
// builds a database of generated runs plus the bundled seeds, starts the
// real server binary on it, and for /healthz and each read endpoint reports
// the first (cold) answer's time, then req/s, p50 and p99 at a number of
// connections, each as a ratio of /healthz in the same run. It also reports
// the server's start-up time and resident memory.
//
//	go run ./cmd/loadbench [--runs 10000] [--conns 64] [--duration 5s] [--tool wrk|go] [--db DB] [--instances N]
//	go run ./cmd/loadbench --hammer [--clients 4] [--duration 20s] [--runs 10000]
//	go run ./cmd/loadbench --write-storm [--duration 15s] [--runs 10000]
//
// --hammer measures the cost limit: a fifth client's /healthz latency,
// idle and while --clients clients (each from its own loopback address)
// ask distinct uncached planner questions, with the server's default
// limits and again with the cost limit off.
//
// --write-storm measures whether one writer starves readers: four readers,
// each from its own loopback address, read a mix of plans, rankings, the
// regressions feed, the run list and a run page for --duration, first
// alone, then while one API key edits its run's title 3 times a second;
// it prints each reader's answers in both phases, their ratio and the 429s.
//
// --db may name a PostgreSQL database (postgres://…); --instances N starts N
// servers on it and splits the connections between them, one load
// generator per server, as a round-robin balancer would (req/s summed, the
// worst instance's percentiles reported).
//
// wrk (apt-get install wrk) is used when it is on the PATH; otherwise a Go
// client with the same number of keep-alive connections.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/matrixd/matrixd/assess"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storegen"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the flag package has printed the usage
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadbench: %v\n", err)
		os.Exit(1)
	}
}

type result struct {
	name        string
	cold        time.Duration
	rps         float64
	p50, p99    time.Duration
	errors, non int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 10000, "generated runs in the database (plus the bundled seeds)")
	db := fs.String("db", "", "database to use or create (default: a new one in a temporary directory, reused for the same --runs)")
	conns := fs.Int("conns", 64, "concurrent connections")
	dur := fs.Duration("duration", 5*time.Second, "load per endpoint")
	tool := fs.String("tool", "", "wrk or go (default: wrk when on the PATH)")
	only := fs.String("only", "", "run only the endpoints whose name contains this")
	instances := fs.Int("instances", 1, "servers on the database, the connections split between them")
	hammerMode := fs.Bool("hammer", false, "measure the cost limit instead: /healthz latency while --clients clients ask distinct uncached planner questions for --duration, with the default limits and with the cost limit off")
	clients := fs.Int("clients", 4, "hammering clients, with --hammer (1 to 200)")
	storm := fs.Bool("write-storm", false, "measure a write storm instead: four readers' answers in --duration without, then with, one API key editing its run's title 3 times a second, with the default limits")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tool == "" {
		*tool = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			*tool = "wrk"
		}
	}
	if *instances < 1 || *instances > 16 || *conns < *instances {
		return fmt.Errorf("--instances takes 1 to 16, and at most --conns")
	}
	if *db == "" {
		*db = filepath.Join(os.TempDir(), fmt.Sprintf("matrixd-loadbench-%d.db", *runs))
	}
	if err := prepare(ctx, *db, *runs, stderr); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "matrixd-loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "matrixd")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/matrixd")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build matrixd: %w", err)
	}
	if err := fitAll(ctx, bin, *db, stderr); err != nil {
		return err
	}
	if *storm {
		durSet := false
		fs.Visit(func(f *flag.Flag) { durSet = durSet || f.Name == "duration" })
		if !durSet {
			*dur = 15 * time.Second
		}
		if *dur < 5*time.Second || *dur > 5*time.Minute {
			return fmt.Errorf("--write-storm takes a --duration of 5s to 5m")
		}
		return writeStorm(ctx, bin, *db, *dur, stdout, stderr)
	}
	if *hammerMode {
		if *clients < 1 || *clients > 200 || *dur < 5*time.Second {
			return fmt.Errorf("--hammer takes --clients 1 to 200 and a --duration of at least 5s")
		}
		return hammer(ctx, bin, *db, *clients, *dur, stdout, stderr)
	}
	var (
		bases []string
		srvs  []*exec.Cmd
	)
	start := time.Now()
	for range *instances {
		port, err := freePort()
		if err != nil {
			return err
		}
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		// One client asks for everything here, so the per-address limit is
		// set out of reach rather than off: its cost is part of what is
		// measured.
		srv := exec.CommandContext(ctx, bin, "--addr", "127.0.0.1:"+strconv.Itoa(port), "--db", *db, "--no-seed", "--rate-limit", "100000000", "--cost-limit", "0")
		srv.Stdout, srv.Stderr = io.Discard, io.Discard // request logs cost as in production; nobody reads them here
		if err := srv.Start(); err != nil {
			return err
		}
		defer func() { srv.Process.Kill(); srv.Wait() }()
		if err := waitReady(base, 30*time.Second); err != nil {
			return err
		}
		bases, srvs = append(bases, base), append(srvs, srv)
	}
	startup := time.Since(start)
	base := bases[0]

	targets, err := endpoints(base)
	if err != nil {
		return err
	}
	var results []result
	for _, t := range targets {
		if *only != "" && t.name != "healthz" && !strings.Contains(t.name, *only) {
			continue
		}
		cold, err := once(t.url)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		r, err := loadAll(ctx, *tool, bases, t.url, *conns, *dur)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		r.name, r.cold = t.name, cold
		results = append(results, r)
		fmt.Fprintf(stderr, "%-28s %9.0f req/s  p50 %s  p99 %s\n", r.name, r.rps, ms(r.p50), ms(r.p99))
	}
	rss := 0.0
	for _, srv := range srvs {
		m, _ := residentMB(srv.Process.Pid)
		rss += m
	}

	fmt.Fprintf(stdout, "matrixd load: %d generated runs + %d seeds on %s, %d instance(s), %d connections, %v per endpoint, %s\n\n",
		*runs, len(ingest.Seeds()), map[bool]string{true: "PostgreSQL", false: "SQLite"}[store.IsPostgres(*db)], *instances, *conns, *dur, *tool)
	fmt.Fprintf(stdout, "| request | cold | req/s | × healthz | p50 | p99 | errors |\n|---|---|---|---|---|---|---|\n")
	base0 := results[0].rps
	for _, r := range results {
		fmt.Fprintf(stdout, "| %s | %s | %.0f | %.2f | %s | %s | %d |\n", r.name, ms(r.cold), r.rps, r.rps/base0, ms(r.p50), ms(r.p99), r.errors+r.non)
	}
	fmt.Fprintf(stdout, "\nstart-up to /readyz: %s; resident memory after the load: %.0f MB\n", ms(startup), rss)
	return nil
}

// loadAll loads u on every instance at once, the connections split between
// them: req/s summed, the worst instance's percentiles kept.
func loadAll(ctx context.Context, tool string, bases []string, u string, conns int, dur time.Duration) (result, error) {
	results := make([]result, len(bases))
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		target := base + strings.TrimPrefix(u, bases[0])
		n := conns / len(bases)
		if i < conns%len(bases) {
			n++
		}
		wg.Go(func() {
			if tool == "wrk" {
				results[i], errs[i] = loadWrk(ctx, target, n, dur)
			} else {
				results[i], errs[i] = loadGo(target, n, dur)
			}
		})
	}
	wg.Wait()
	var out result
	for i, r := range results {
		if errs[i] != nil {
			return result{}, errs[i]
		}
		out.rps += r.rps
		out.p50, out.p99 = max(out.p50, r.p50), max(out.p99, r.p99)
		out.errors += r.errors
		out.non += r.non
	}
	return out, nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms" }

// prepare makes the database unless it holds the runs already.
func prepare(ctx context.Context, path string, n int, stderr io.Writer) error {
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	have, err := st.CountRuns(ctx)
	if err != nil || have >= n+len(ingest.Seeds()) {
		return err
	}
	fmt.Fprintf(stderr, "generating %d runs into %s (once; later runs reuse it)\n", n, path)
	w, err := assess.New(st) // checked as they are written, so the server need not check them at start
	if err != nil {
		return err
	}
	for _, s := range ingest.Seeds() {
		r, err := ingest.Parse(s.Data)
		if err != nil {
			return err
		}
		if _, _, err := w.CreateRun(ctx, r); err != nil {
			return err
		}
	}
	runs := storegen.Runs(1, n)
	w = w.WithoutCorroboration() // synthetic numbers corroborate nothing
	for i := 0; i < len(runs); i += 500 {
		if _, _, err := w.CreateRuns(ctx, runs[i:min(i+500, len(runs))]); err != nil {
			return err
		}
	}
	return nil
}

// fitAll has the server binary store the fit of every run its method has
// not fitted (matrixd fit), as the server does in the background after
// each write, so that the server measured starts on a database whose fits
// are stored, as one that has run a while does.
func fitAll(ctx context.Context, bin, path string, stderr io.Writer) error {
	fit := exec.CommandContext(ctx, bin, "fit", "--db", path)
	fit.Stdout, fit.Stderr = stderr, stderr
	if err := fit.Run(); err != nil {
		return fmt.Errorf("matrixd fit: %w", err)
	}
	return nil
}

type target struct{ name, url string }

// endpoints are the requests measured; run ids come from the server.
func endpoints(base string) ([]target, error) {
	id := func(query string) (string, error) {
		resp, err := http.Get(base + "/v1/runs?limit=1&" + query)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(b)
		if m == nil {
			return "", fmt.Errorf("no run for %q", query)
		}
		return string(m[1]), nil
	}
	fara, err := id("model=fara")
	if err != nil {
		return nil, err
	}
	nemo, err := id("model=nemotron-nano-12b")
	if err != nil {
		return nil, err
	}
	newest, err := id("")
	if err != nil {
		return nil, err
	}
	// A series of the generated runs, and its last step's older run.
	var list struct {
		Series []struct {
			LatestRunID string `json:"latest_run_id"`
		} `json:"series"`
	}
	if err := getJSON(base+"/v1/series?limit=1", &list); err != nil || len(list.Series) == 0 {
		return nil, fmt.Errorf("no series among the runs (%v)", err)
	}
	series := list.Series[0].LatestRunID
	var steps struct {
		Steps []struct{ From, To string } `json:"steps"`
	}
	if err := getJSON(base+"/v1/runs/"+series+"/series", &steps); err != nil || len(steps.Steps) == 0 {
		return nil, fmt.Errorf("series of %s: no steps (%v)", series, err)
	}
	last := steps.Steps[len(steps.Steps)-1]
	q := url.QueryEscape
	return []target{
		{"healthz", base + "/healthz"},
		{"GET /v1/runs/{id}", base + "/v1/runs/" + newest},
		{"GET /v1/runs?limit=20", base + "/v1/runs?limit=20"},
		{"runs gpu+vram sorted by peak", base + "/v1/runs?gpu=" + q("RTX 3090") + "&vram_gb_min=16&sort=-peak_total_tok_s"},
		{"leaderboard 16K × 8", base + "/v1/leaderboard?context_tokens=16384&concurrency=8"},
		{"GET /v1/gpus", base + "/v1/gpus"},
		{"decode?format=csv", base + "/v1/runs/" + fara + "/decode?format=csv"},
		{"compare", base + "/v1/compare?run_ids=" + fara + "," + nemo},
		{"GET /v1/series", base + "/v1/series"},
		{"GET /v1/runs/{id}/series", base + "/v1/runs/" + series + "/series"},
		{"compare series step (verdict)", base + "/v1/compare?run_ids=" + last.From + "," + last.To},
		{"feeds/runs.atom", base + "/feeds/runs.atom"},
		{"feeds/regressions.atom", base + "/feeds/regressions.atom"},
		{"feeds/runs.atom?gpu=RTX 3090", base + "/feeds/runs.atom?gpu=" + q("RTX 3090")},
		{"calculator/decode", base + "/v1/calculator/decode?run_id=" + fara + "&context_tokens=49152&concurrency=8"},
		{"calculator/grid", base + "/v1/calculator/grid?run_id=" + nemo + "&contexts=0,24576,49152,98304&concurrencies=1,3,6,12,24"},
		{"planner, every run", base + "/v1/planner?context_tokens=16384&min_per_request_tok_s=30&users=200"},
		{"planner, every run, sort=cost", base + "/v1/planner?context_tokens=8192&min_per_request_tok_s=20&users=500&gpu_hour_usd=2.5&sort=cost"},
		{"leaderboard predicted 20K × 6", base + "/v1/leaderboard?context_tokens=20000&concurrency=6&predicted=true"},
	}, nil
}

// getJSON decodes the answer to u, asking again while its fits are made.
func getJSON(u string, v any) error {
	for range 120 {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: status %d", u, resp.StatusCode)
		}
		return json.Unmarshal(b, v)
	}
	return fmt.Errorf("%s: still fitting after a minute", u)
}

// once times one request, asking for the same representation as the load
// (no compression): until its first 200, asking again after a 503 (fits
// being made) as Retry-After says.
func once(u string) (time.Duration, error) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t := time.Now()
	for {
		resp, err := client.Get(u)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && time.Since(t) < time.Minute {
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			continue
		}
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(t), nil
	}
}

var wrkLatency = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$`)
var wrkRPS = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
var wrkErrors = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)

func loadWrk(ctx context.Context, u string, conns int, dur time.Duration) (result, error) {
	out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+dur.String(), "--latency", u).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	var r result
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return result{}, fmt.Errorf("no Requests/sec in wrk output:\n%s", out)
	}
	r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, l := range wrkLatency.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(l[2]), 64)
		d := time.Duration(v * float64(map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(l[3])]))
		if string(l[1]) == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		r.non, _ = strconv.Atoi(string(m[1]))
	}
	return r, nil
}

// loadGo keeps conns requests in flight for dur and records each latency.
func loadGo(u string, conns int, dur time.Duration) (result, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	var (
		mu   sync.Mutex
		lats []time.Duration
		res  result
		wg   sync.WaitGroup
	)
	deadline := time.Now().Add(dur)
	for range conns {
		wg.Go(func() {
			var mine []time.Duration
			errs, non := 0, 0
			for time.Now().Before(deadline) {
				t := time.Now()
				resp, err := client.Get(u)
				if err != nil {
					errs++
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					non++
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lats = append(lats, mine...)
			res.errors += errs
			res.non += non
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lats) == 0 {
		return result{}, errors.New("no request completed")
	}
	slices.Sort(lats)
	res.rps = float64(len(lats)) / dur.Seconds()
	res.p50, res.p99 = lats[len(lats)/2], lats[len(lats)*99/100]
	return res, nil
}

func waitReady(base string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s/readyz did not answer within %v", base, limit)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// residentMB reads the process's resident set size from /proc.
func residentMB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}
