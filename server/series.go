package server

import (
	"context"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/history"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
)

// ListSeries implements GET /v1/series.
func (s *Server) ListSeries(ctx context.Context, req api.ListSeriesRequestObject) (api.ListSeriesResponseObject, error) {
	p := req.Params
	if p.VRAMGBMin != nil && p.VRAMGBMax != nil && *p.VRAMGBMin > *p.VRAMGBMax {
		return nil, invalidParamSays("vram_gb_min", msg.New("problem.vram_min_over_max"))
	}
	f, err := s.calc.WithGPU(ctx, runFilter(nil, p.Model, p.Quantization, p.Engine, p.EngineVersion, p.KVCacheDtype, p.Submitter, p.SubmittedBy, p.VRAMGBMin, p.VRAMGBMax), deref(p.GPU))
	if err != nil {
		return nil, err
	}
	limit := 20
	if p.Limit != nil {
		limit = *p.Limit
	}
	list, more, err := s.store.ListSeries(ctx, f, limit)
	if err != nil {
		return nil, err
	}
	out := api.ListSeries200JSONResponse{Series: make([]api.SeriesSummary, len(list)), Truncated: more}
	for i, ss := range list {
		out.Series[i] = api.SeriesSummary{Runs: ss.Runs, LatestRunID: ss.LatestRunID, LatestAt: ss.LatestAt, Model: ss.ModelName,
			GPU: ss.GPU, Engine: ss.EngineName, Quantization: opt(ss.Quantization)}
	}
	return out, nil
}

// GetRunSeries implements GET /v1/runs/{run_id}/series.
func (s *Server) GetRunSeries(ctx context.Context, req api.GetRunSeriesRequestObject) (api.GetRunSeriesResponseObject, error) {
	ans, err := s.calc.Series(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	out := api.GetRunSeries200JSONResponse{Runs: make([]api.SeriesRun, len(ans.Runs)), Steps: make([]api.SeriesStep, len(ans.Steps)),
		Truncated: ans.More}
	out.Warnings, out.Notices = warnings(ans.Warnings)
	for i, m := range ans.Runs {
		out.Runs[i] = api.SeriesRun{ID: m.ID, Title: m.Title, EngineVersion: opt(m.EngineVersion), CreatedAt: m.CreatedAt, SubmittedBy: opt(m.SubmittedBy)}
	}
	for i, st := range ans.Steps {
		out.Steps[i] = toAPIStep(st)
	}
	return out, nil
}

func toAPIStep(st predict.Step) api.SeriesStep {
	r := st.Noise.Rule
	out := api.SeriesStep{From: st.From, To: st.To, Verdict: api.Verdict(st.Verdict), Why: st.Why, WhyNotice: toAPINotice(st.WhyMessage), MeasuredCells: st.Measured,
		NoiseFloor: api.NoiseFloor{Basis: api.NoiseFloorBasis(st.Noise.Basis), SigmaFrom: st.Noise.SigmaFrom, SigmaTo: st.Noise.SigmaTo,
			Z: r.Z, MinFloor: r.MinFloor, MaxFloor: r.MaxFloor, Majority: r.Majority, MinCells: r.MinCells, Alpha: r.Alpha},
		Cells: make([]api.StepCell, len(st.Cells)), Rows: make([]api.StepRow, len(st.Rows)),
		RegressedRows: nonNilInts(st.RegressedRows), ImprovedRows: nonNilInts(st.ImprovedRows), SettingsDiffer: nonNilStrings(st.Differ)}
	if st.Noise.Pairs > 0 { // repeated_runs and step_scatter say how many cells measured it
		out.NoiseFloor.RepeatedCells = &st.Noise.Pairs
	}
	for i, c := range st.Cells {
		out.Cells[i] = api.StepCell{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency, FromTotalTokS: c.From, ToTotalTokS: c.To,
			Ratio: c.Ratio, Floor: c.Floor, Verdict: api.Verdict(c.Verdict), Predicted: c.Predicted}
	}
	for i, g := range st.Rows {
		out.Rows[i] = toAPIRow(g)
	}
	return out
}

func toAPIRow(g history.Group) api.StepRow {
	return api.StepRow{ContextTokens: g.ContextTokens, Cells: g.Cells, Up: g.Up, Down: g.Down, MedianRatio: g.MedianRatio, SignP: g.SignP, Verdict: api.Verdict(g.Verdict)}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
