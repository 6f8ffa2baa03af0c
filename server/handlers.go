package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server/httpcache"
	"github.com/matrixd/matrixd/store"
)

// invalidParam is a request that passed the schema but not the handler's
// own checks; it becomes a 400 naming the parameter.
func invalidParam(field, message string) error {
	return fieldErrors{fieldError(field, message)}
}

// invalidParamSays is invalidParam with a message that has a code.
func invalidParamSays(field string, m msg.Message) error {
	return fieldErrors{fieldNotice(field, m)}
}

// GetHealth implements GET /healthz.
func (s *Server) GetHealth(ctx context.Context, _ api.GetHealthRequestObject) (api.GetHealthResponseObject, error) {
	return api.GetHealth200JSONResponse{Status: "ok"}, nil
}

// GetReady implements GET /readyz.
func (s *Server) GetReady(ctx context.Context, _ api.GetReadyRequestObject) (api.GetReadyResponseObject, error) {
	if err := s.store.Ping(ctx); err != nil {
		return api.GetReady503ApplicationProblemPlusJSONResponse{UnavailableApplicationProblemPlusJSONResponse: api.UnavailableApplicationProblemPlusJSONResponse(
			problem(http.StatusServiceUnavailable, "the database does not answer"))}, nil
	}
	return api.GetReady200JSONResponse{Status: "ok"}, nil
}

// GetOpenAPIYAML implements GET /openapi.yaml.
func (s *Server) GetOpenAPIYAML(ctx context.Context, _ api.GetOpenAPIYAMLRequestObject) (api.GetOpenAPIYAMLResponseObject, error) {
	return api.GetOpenAPIYAML200ApplicationYamlResponse{Body: bytes.NewReader(s.specYAML), ContentLength: int64(len(s.specYAML))}, nil
}

// GetOpenAPIJSON implements GET /openapi.json.
func (s *Server) GetOpenAPIJSON(ctx context.Context, _ api.GetOpenAPIJSONRequestObject) (api.GetOpenAPIJSONResponseObject, error) {
	return rawJSON(s.specJSON), nil
}

// rawJSON writes bytes that are already JSON.
type rawJSON []byte

func (b rawJSON) VisitGetOpenAPIJSONResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

// ListRuns implements GET /v1/runs.
func (s *Server) ListRuns(ctx context.Context, req api.ListRunsRequestObject) (api.ListRunsResponseObject, error) {
	p := req.Params
	if p.VRAMGBMin != nil && p.VRAMGBMax != nil && *p.VRAMGBMin > *p.VRAMGBMax {
		return nil, invalidParamSays("vram_gb_min", msg.New("problem.vram_min_over_max"))
	}
	f, err := s.calc.WithGPU(ctx, runFilter(nil, p.Model, p.Quantization, p.Engine, p.EngineVersion, p.KVCacheDtype, p.Submitter, p.SubmittedBy, p.VRAMGBMin, p.VRAMGBMax), deref(p.GPU))
	if err != nil {
		return nil, err
	}
	sort := store.SortCreatedDesc
	if p.Sort != nil {
		sort = string(*p.Sort)
	}
	runs, next, err := s.store.ListRuns(ctx, f, sort, limitOr(p.Limit), deref(p.Cursor))
	if err != nil {
		return nil, err
	}
	if wantCSV((*string)(p.Format), accept(ctx)) {
		return runsCSV(runs)
	}
	out := api.ListRuns200JSONResponse{Items: make([]api.RunSummary, len(runs)), NextCursor: opt(next)}
	for i, r := range runs {
		out.Items[i] = toAPISummary(r)
	}
	return out, nil
}

// runsCSV is a page of summaries as CSV: one row a run, with where it
// came from. The next page's cursor is not in CSV; JSON gives it.
func runsCSV(runs []store.RunSummary) (csvTable, error) {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		var peak *float64
		if r.Peak != nil {
			peak = &r.Peak.TotalTokS
		}
		rows[i] = []string{r.ID, r.Title, r.ModelName, r.Quantization, r.GPU, fstr(r.VRAMGB), r.EngineName, r.EngineVersion,
			r.Submitter, r.SubmittedBy, r.CreatedAt.Format(time.RFC3339Nano), r.MethodClass, strconv.FormatBool(r.Flagged),
			fstr(r.SingleStreamTokS), fstr(peak), r.SourceURL, r.Publisher, r.License, r.RetrievedAt}
	}
	return csvBody([]string{"id", "title", "model", "quantization", "gpu", "vram_gb", "engine", "engine_version",
		"submitter", "submitted_by", "created_at", "method_class", "flagged",
		"single_stream_tok_s", "peak_total_tok_s", "source_url", "publisher", "license", "retrieved_at"}, rows)
}

func limitOr(l *int) int {
	if l == nil {
		return 50
	}
	return *l
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// GetRun implements GET /v1/runs/{run_id}.
func (s *Server) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	r, err := s.store.Run(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	return api.GetRun200JSONResponse(toAPIRun(r)), nil
}

// wantCSV decides the representation: the format parameter wins, else
// Accept when it prefers text/csv (by q-value) to JSON.
func wantCSV(format *string, acceptHeader string) bool {
	if format != nil {
		return *format == "csv"
	}
	qCSV, qJSON := 0.0, 0.0
	for part := range strings.SplitSeq(acceptHeader, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch mt {
		case "text/csv":
			qCSV = max(qCSV, q)
		case "application/json", "application/*", "*/*":
			qJSON = max(qJSON, q)
		}
	}
	return qCSV > 0 && qCSV > qJSON
}

func fstr(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func istr(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

// csvTable is a CSV answer, with its charset (the generated response
// types send a bare text/csv).
type csvTable []byte

func csvBody(header []string, rows [][]string) (csvTable, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return csvTable(buf.Bytes()), nil
}

func (t csvTable) visit(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(t)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(t)
	return err
}

func (t csvTable) VisitListRunsResponse(w http.ResponseWriter) error         { return t.visit(w) }
func (t csvTable) VisitListDecodeCellsResponse(w http.ResponseWriter) error  { return t.visit(w) }
func (t csvTable) VisitListPrefillCellsResponse(w http.ResponseWriter) error { return t.visit(w) }

// ListDecodeCells implements GET /v1/runs/{run_id}/decode.
func (s *Server) ListDecodeCells(ctx context.Context, req api.ListDecodeCellsRequestObject) (api.ListDecodeCellsResponseObject, error) {
	p := req.Params
	f := store.DecodeFilter{ContextTokens: p.ContextTokens, Concurrency: p.Concurrency}
	if p.Status != nil {
		f.Status = string(*p.Status)
	}
	cells, err := s.store.DecodeCells(ctx, req.RunID, f)
	if err != nil {
		return nil, err
	}
	if wantCSV((*string)(p.Format), accept(ctx)) {
		rows := make([][]string, len(cells))
		for i, c := range cells {
			rows[i] = []string{strconv.Itoa(c.ContextTokens), strconv.Itoa(c.Concurrency), c.Status,
				fstr(c.TotalTokS), fstr(c.PerRequestTokS), fstr(c.TTFTMs), fstr(c.TBTMs), fstr(c.AvgActiveRequests),
				istr(c.CompletedRequests), istr(c.OutputTokens), fstr(c.DurationS)}
		}
		return csvBody([]string{"context_tokens", "concurrency", "status", "total_tok_s", "per_request_tok_s", "ttft_ms",
			"tbt_ms", "avg_active_requests", "completed_requests", "output_tokens", "duration_s"}, rows)
	}
	out := api.ListDecodeCells200JSONResponse{RunID: req.RunID, Items: make([]api.DecodeCell, len(cells))}
	for i, c := range cells {
		out.Items[i] = toAPIDecodeCell(c)
	}
	return out, nil
}

// ListPrefillCells implements GET /v1/runs/{run_id}/prefill.
func (s *Server) ListPrefillCells(ctx context.Context, req api.ListPrefillCellsRequestObject) (api.ListPrefillCellsResponseObject, error) {
	p := req.Params
	f := store.PrefillFilter{ContextTokens: p.ContextTokens}
	if p.Status != nil {
		f.Status = string(*p.Status)
	}
	cells, err := s.store.PrefillCells(ctx, req.RunID, f)
	if err != nil {
		return nil, err
	}
	if wantCSV((*string)(p.Format), accept(ctx)) {
		rows := make([][]string, len(cells))
		for i, c := range cells {
			rows[i] = []string{strconv.Itoa(c.ContextTokens), c.Status, fstr(c.PromptTokS), fstr(c.TTFTMs)}
		}
		return csvBody([]string{"context_tokens", "status", "prompt_tok_s", "ttft_ms"}, rows)
	}
	out := api.ListPrefillCells200JSONResponse{RunID: req.RunID, Items: make([]api.PrefillCell, len(cells))}
	for i, c := range cells {
		out.Items[i] = toAPIPrefillCell(c)
	}
	return out, nil
}

// gridAxes returns the sorted distinct contexts and concurrencies of cells.
func gridAxes(cells []store.DecodeCell) (contexts, concurrencies []int) {
	for _, c := range cells {
		contexts = append(contexts, c.ContextTokens)
		concurrencies = append(concurrencies, c.Concurrency)
	}
	slices.Sort(contexts)
	slices.Sort(concurrencies)
	return slices.Compact(contexts), slices.Compact(concurrencies)
}

// GetMatrix implements GET /v1/runs/{run_id}/matrix.
func (s *Server) GetMatrix(ctx context.Context, req api.GetMatrixRequestObject) (api.GetMatrixResponseObject, error) {
	cells, err := s.store.DecodeCells(ctx, req.RunID, store.DecodeFilter{})
	if err != nil {
		return nil, err
	}
	contexts, concurrencies := gridAxes(cells)
	out := api.GetMatrix200JSONResponse{RunID: req.RunID, Contexts: nonNilInts(contexts), Concurrencies: nonNilInts(concurrencies),
		Rows: make([]api.MatrixRow, len(contexts))}
	for i, l := range contexts {
		out.Rows[i] = api.MatrixRow{ContextTokens: l, Cells: make([]*api.DecodeCell, len(concurrencies))}
	}
	for _, c := range cells {
		i, _ := slices.BinarySearch(contexts, c.ContextTokens)
		j, _ := slices.BinarySearch(concurrencies, c.Concurrency)
		cell := toAPIDecodeCell(c)
		out.Rows[i].Cells[j] = &cell
	}
	return out, nil
}

func nonNilInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// ListGPUs implements GET /v1/gpus.
func (s *Server) ListGPUs(ctx context.Context, _ api.ListGPUsRequestObject) (api.ListGPUsResponseObject, error) {
	gpus, err := s.store.GPUs(ctx)
	if err != nil {
		return nil, err
	}
	out := api.ListGPUs200JSONResponse{Items: make([]api.GPUCatalogItem, len(gpus))}
	for i, g := range gpus {
		out.Items[i] = api.GPUCatalogItem{GPU: g.GPU, VRAMGB: g.VRAMGB, RunCount: g.RunCount}
	}
	return out, nil
}

// ListModels implements GET /v1/models.
func (s *Server) ListModels(ctx context.Context, _ api.ListModelsRequestObject) (api.ListModelsResponseObject, error) {
	models, err := s.store.Models(ctx)
	if err != nil {
		return nil, err
	}
	out := api.ListModels200JSONResponse{Items: make([]api.ModelCatalogItem, len(models))}
	for i, m := range models {
		out.Items[i] = api.ModelCatalogItem{Model: m.Model, Quantizations: m.Quantizations, RunCount: m.RunCount}
	}
	return out, nil
}

// ListEngines implements GET /v1/engines.
func (s *Server) ListEngines(ctx context.Context, _ api.ListEnginesRequestObject) (api.ListEnginesResponseObject, error) {
	engines, err := s.store.Engines(ctx)
	if err != nil {
		return nil, err
	}
	out := api.ListEngines200JSONResponse{Items: make([]api.EngineCatalogItem, len(engines))}
	for i, e := range engines {
		out.Items[i] = api.EngineCatalogItem{Engine: e.Engine, Version: opt(e.Version), RunCount: e.RunCount}
	}
	return out, nil
}

// GetLeaderboard implements GET /v1/leaderboard.
func (s *Server) GetLeaderboard(ctx context.Context, req api.GetLeaderboardRequestObject) (api.GetLeaderboardResponseObject, error) {
	p := req.Params
	if p.VRAMGBMin != nil && p.VRAMGBMax != nil && *p.VRAMGBMin > *p.VRAMGBMax {
		return nil, invalidParamSays("vram_gb_min", msg.New("problem.vram_min_over_max"))
	}
	metric := store.MetricTotalTokS
	if p.Metric != nil {
		metric = string(*p.Metric)
	}
	f, err := s.calc.WithGPU(ctx, runFilter(nil, p.Model, p.Quantization, p.Engine, p.EngineVersion, p.KVCacheDtype, p.Submitter, p.SubmittedBy, p.VRAMGBMin, p.VRAMGBMax), deref(p.GPU))
	if err != nil {
		return nil, err
	}
	// One class at a time: other classes measured something else.
	f.MethodClass = store.MethodSustainedDecode
	if p.MethodClass != nil {
		f.MethodClass = string(*p.MethodClass)
	}
	f.ExcludeFlagged = p.IncludeFlagged == nil || !*p.IncludeFlagged
	if p.Predicted != nil && *p.Predicted {
		return s.predictedLeaderboard(ctx, p, f, metric)
	}
	entries, next, err := s.store.Leaderboard(ctx, store.LeaderboardQuery{
		ContextTokens: p.ContextTokens, Concurrency: p.Concurrency, Metric: metric,
		Filter: f, Limit: limitOr(p.Limit), Cursor: deref(p.Cursor),
	})
	if err != nil {
		return nil, err
	}
	out := api.GetLeaderboard200JSONResponse{ContextTokens: p.ContextTokens, Concurrency: p.Concurrency,
		Metric: api.LeaderboardMetric(metric), MethodClass: api.MethodClass(f.MethodClass), NextCursor: opt(next), Items: make([]api.LeaderboardEntry, len(entries))}
	var warns []msg.Message
	if len(entries) == 0 && p.Cursor == nil {
		// Measured cells sit on each run's grid; an empty ranking says
		// where to look instead of nothing.
		w, err := s.calc.EmptyBoardWarning(ctx, f, p.ContextTokens, p.Concurrency)
		if err != nil {
			return nil, err
		}
		warns = append(warns, w)
	}
	flagged, disputed := 0, 0
	for i, e := range entries {
		cell := toAPIDecodeCell(e.Cell)
		out.Items[i] = api.LeaderboardEntry{Rank: e.Rank, Value: e.Value, Run: toAPISummary(e.Run), Cell: &cell}
		if e.Run.Flagged {
			flagged++
		}
		if e.Run.Corroboration == store.CorroborationDisputed {
			disputed++
		}
	}
	if flagged > 0 {
		warns = append(warns, msg.New("api.ranked_flagged", flagged))
	}
	if disputed > 0 {
		code := "api.ranked_disputed"
		if disputed == 1 {
			code = "api.ranked_disputed_one"
		}
		warns = append(warns, msg.New(code, disputed))
	}
	if len(entries) > 0 && p.Cursor == nil {
		// One class is ranked: say what else was measured, and how to
		// rank it.
		note, err := s.calc.OtherClassesNote(ctx, f)
		if err != nil {
			return nil, err
		}
		if note.Code != "" {
			warns = append(warns, note)
		}
	}
	if len(warns) > 0 {
		texts, notices := warnings(warns)
		out.Warnings, out.Notices = &texts, &notices
	}
	return out, nil
}

// compareWarnings says what to know before reading a comparison's ratios:
// runs of other method classes than the first measured something else,
// and flagged runs failed a plausibility check.
func compareWarnings(runs []store.Run) []msg.Message {
	var warn []msg.Message
	base := runs[0].MethodOf().Class
	var other []string
	for _, r := range runs[1:] {
		if c := r.MethodOf().Class; c != base {
			other = append(other, r.ID+" is "+c)
		}
	}
	if len(other) > 0 {
		warn = append(warn, msg.New("api.compare_methods_differ", runs[0].ID, base, strings.Join(other, ", ")))
	}
	for _, r := range runs {
		if r.Trust != nil && r.Trust.Flagged {
			f := r.Trust.Flags[0]
			warn = append(warn, msg.New("api.compare_run_flagged", r.ID, store.Message(f.MessageCode, f.MessageParams, f.MessageParts, f.Message)))
		}
	}
	return warn
}

// maxComparedCells bounds a comparison's answer, in cells × runs: two of
// the largest runs a store takes (64 × 64) compare in full, about 2 MB; ten
// of them, 10 MB, do not.
const maxComparedCells = 2 * store.MaxDecodeCells

// CompareRuns implements GET /v1/compare.
func (s *Server) CompareRuns(ctx context.Context, req api.CompareRunsRequestObject) (api.CompareRunsResponseObject, error) {
	ids := req.Params.RunIDs
	if len(ids) < 2 {
		return nil, invalidParamSays("run_ids", msg.New("problem.run_ids_too_few"))
	}
	runs := make([]store.Run, len(ids))
	for i, id := range ids {
		if slices.Index(ids, id) != i {
			return nil, invalidParamSays("run_ids", msg.New("problem.run_ids_twice", id))
		}
		r, err := s.store.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		runs[i] = r
	}
	wanted := func(only *[]int, v int) bool { return only == nil || slices.Contains(*only, v) }
	type key struct{ l, b int }
	byRun := make([]map[key]store.DecodeCell, len(runs))
	var all []store.DecodeCell
	union := map[key]bool{}
	for i, r := range runs {
		byRun[i] = make(map[key]store.DecodeCell, len(r.Decode))
		for _, c := range r.Decode {
			if !wanted(req.Params.Contexts, c.ContextTokens) || !wanted(req.Params.Concurrencies, c.Concurrency) {
				continue
			}
			k := key{c.ContextTokens, c.Concurrency}
			byRun[i][k], union[k] = c, true
			all = append(all, c)
		}
	}
	if n := len(union) * len(runs); n > maxComparedCells {
		return nil, invalidParam("run_ids", fmt.Sprintf("%d runs over %d cells are %d compared cells, more than the %d an answer holds; narrow it with contexts or concurrencies, or compare fewer runs",
			len(runs), len(union), n, maxComparedCells))
	}
	contexts, concurrencies := gridAxes(all)
	out := api.CompareRuns200JSONResponse{RunIDs: ids, Runs: make([]api.RunSummary, len(runs)),
		Contexts: nonNilInts(contexts), Concurrencies: nonNilInts(concurrencies), Cells: []api.ComparedCellRow{}}
	out.Warnings, out.Notices = warnings(compareWarnings(runs))
	for i, r := range runs {
		out.Runs[i] = toAPISummary(store.Summarize(r))
	}
	if len(runs) == 2 {
		st, err := s.calc.CompareRuns(ctx, runs[0].ID, runs[1].ID)
		if err != nil {
			return nil, err
		}
		v := toAPIStep(st)
		out.Verdict = &v
	}
	for _, l := range contexts {
		for _, b := range concurrencies {
			k := key{l, b}
			present := false
			for i := range runs {
				_, ok := byRun[i][k]
				present = present || ok
			}
			if !present {
				continue
			}
			base, hasBase := byRun[0][k]
			row := api.ComparedCellRow{ContextTokens: l, Concurrency: b, Runs: make([]api.ComparedCell, len(runs))}
			for i, r := range runs {
				c, ok := byRun[i][k]
				cc := api.ComparedCell{RunID: r.ID, Status: "not_measured"}
				if ok {
					cc.Status = api.ComparedCellStatus(c.Status)
					cc.TotalTokS, cc.PerRequestTokS, cc.TTFTMs, cc.TBTMs = c.TotalTokS, c.PerRequestTokS, c.TTFTMs, c.TBTMs
					if hasBase {
						cc.TotalTokSRatio = ratio(c.TotalTokS, base.TotalTokS)
						cc.PerRequestTokSRatio = ratio(c.PerRequestTokS, base.PerRequestTokS)
						cc.TTFTMsRatio = ratio(c.TTFTMs, base.TTFTMs)
						cc.TBTMsRatio = ratio(c.TBTMs, base.TBTMs)
					}
				}
				row.Runs[i] = cc
			}
			out.Cells = append(out.Cells, row)
		}
	}
	return out, nil
}

// ratio is v/base, or nil where either is missing or base is zero.
func ratio(v, base *float64) *float64 {
	if v == nil || base == nil || *base == 0 {
		return nil
	}
	r := *v / *base
	return &r
}

// predictedLeaderboard answers GET /v1/leaderboard?predicted=true: every
// matching run ranked by its predicted cell. Its cursor is the place the
// next page starts at.
func (s *Server) predictedLeaderboard(ctx context.Context, p api.GetLeaderboardParams, f store.RunFilter, metric string) (api.GetLeaderboardResponseObject, error) {
	// A cursor is the place the next page starts at, tied to its listing
	// (cell, metric, filters): reused with another it is refused.
	listing := p
	listing.Cursor, listing.Limit = nil, nil
	b, _ := json.Marshal(listing)
	sum := sha256.Sum256(b)
	tag := hex.EncodeToString(sum[:6])
	offset := 0
	if c := deref(p.Cursor); c != "" {
		place, t, _ := strings.Cut(strings.TrimPrefix(c, "place-"), "-")
		n, err := strconv.Atoi(place)
		switch {
		case !strings.HasPrefix(c, "place-") || err != nil || n < 1 || n >= predict.MaxPredictedRank:
			return nil, invalidParamSays("cursor", msg.New("api.cursor_not_predicted"))
		case t != tag:
			return nil, invalidParamSays("cursor", msg.New("api.cursor_other_ranking"))
		}
		offset = n
	}
	limit := min(limitOr(p.Limit), predict.MaxPredictedRank-offset) // the last page ends at the last place listed
	board, err := s.calc.PredictedLeaderboard(ctx, f, p.ContextTokens, p.Concurrency, metric, offset, limit)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(board.Entries))
	for i, e := range board.Entries {
		ids[i] = e.Run.ID
	}
	sums, err := s.store.RunSummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	predicted := true
	warns, notices := warnings(board.Warnings)
	out := api.GetLeaderboard200JSONResponse{ContextTokens: p.ContextTokens, Concurrency: p.Concurrency,
		Metric: api.LeaderboardMetric(metric), MethodClass: api.MethodClass(f.MethodClass), Predicted: &predicted,
		MatchedRuns: &board.Matched, Pending: &board.Pending, Warnings: &warns, Notices: &notices, Items: []api.LeaderboardEntry{}}
	if at := offset + len(board.Entries); board.More && at < predict.MaxPredictedRank {
		next := "place-" + strconv.Itoa(at) + "-" + tag
		out.NextCursor = &next
	}
	q := calculator.Query{ContextTokens: p.ContextTokens, Concurrency: p.Concurrency}
	for _, e := range board.Entries {
		run, ok := sums[e.Run.ID]
		if !ok {
			continue // deleted meanwhile
		}
		pred := ToAPIDecode(q, e.Answer)
		value := e.Value // as the prediction shows it
		if v := map[string]*api.Estimate{store.MetricTotalTokS: pred.TotalTokS, store.MetricPerRequestTokS: pred.PerRequestTokS,
			store.MetricTTFTMs: pred.TTFTMs, store.MetricTBTMs: pred.TBTMs}[metric]; v != nil {
			value = v.Value
		}
		rank := e.Rank
		if n := len(out.Items); n > 0 && out.Items[n-1].Value == value {
			rank = out.Items[n-1].Rank // equal as shown: ties share a rank
		}
		out.Items = append(out.Items, api.LeaderboardEntry{Rank: rank, Value: value, Run: toAPISummary(run), Prediction: &pred})
	}
	if board.Pending > 0 {
		httpcache.DoNotStore(ctx) // partial: asking again must not replay it
	}
	return out, nil
}
