package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/matrixd/matrixd/api"
)

// tool is one read operation as a tool: call decodes the arguments into
// the operation's request and calls its strict handler; summary sums the
// API's answer up in a line.
type tool struct {
	op      string // the operationId, also the tool's name
	call    func(ctx context.Context, ops api.StrictServerInterface, args []byte) (visit func(http.ResponseWriter) error, err error)
	summary func(body []byte) string
}

// decode reads a tool's arguments (already checked against its input
// schema, defaults filled in) into an operation's parameters, whose JSON
// names are the parameters' own.
func decode[P any](args []byte) (P, error) {
	var p P
	err := json.Unmarshal(args, &p)
	return p, err
}

func tools() []tool {
	return []tool{
		{op: "listRuns", summary: sumRuns, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.ListRunsParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.ListRuns(ctx, api.ListRunsRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitListRunsResponse, nil
		}},
		{op: "getRun", summary: sumRun, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[struct {
				RunID api.ParamRunID `json:"run_id"`
			}](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.GetRun(ctx, api.GetRunRequestObject{RunID: p.RunID})
			if err != nil {
				return nil, err
			}
			return r.VisitGetRunResponse, nil
		}},
		{op: "getLeaderboard", summary: sumLeaderboard, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.GetLeaderboardParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.GetLeaderboard(ctx, api.GetLeaderboardRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitGetLeaderboardResponse, nil
		}},
		{op: "compareRuns", summary: sumComparison, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.CompareRunsParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.CompareRuns(ctx, api.CompareRunsRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitCompareRunsResponse, nil
		}},
		{op: "estimateDecode", summary: sumDecode, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.EstimateDecodeParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.EstimateDecode(ctx, api.EstimateDecodeRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitEstimateDecodeResponse, nil
		}},
		{op: "estimateCapacity", summary: sumCapacity, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.EstimateCapacityParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.EstimateCapacity(ctx, api.EstimateCapacityRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitEstimateCapacityResponse, nil
		}},
		{op: "planCapacity", summary: sumPlan, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.PlanCapacityParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.PlanCapacity(ctx, api.PlanCapacityRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitPlanCapacityResponse, nil
		}},
		{op: "listModels", summary: sumModels, call: func(ctx context.Context, ops api.StrictServerInterface, _ []byte) (func(http.ResponseWriter) error, error) {
			r, err := ops.ListModels(ctx, api.ListModelsRequestObject{})
			if err != nil {
				return nil, err
			}
			return r.VisitListModelsResponse, nil
		}},
		{op: "listHardware", summary: sumHardware, call: func(ctx context.Context, ops api.StrictServerInterface, args []byte) (func(http.ResponseWriter) error, error) {
			p, err := decode[api.ListHardwareParams](args)
			if err != nil {
				return nil, err
			}
			r, err := ops.ListHardware(ctx, api.ListHardwareRequestObject{Params: p})
			if err != nil {
				return nil, err
			}
			return r.VisitListHardwareResponse, nil
		}},
	}
}

// The summaries restate the answer's own fields; an answer they cannot
// read is summed up by its size alone (the JSON beside it is the answer).

func sumRuns(body []byte) string {
	var l api.RunList
	if json.Unmarshal(body, &l) != nil {
		return unread(body)
	}
	s := count(len(l.Items), "run", "runs")
	for i, r := range l.Items {
		if i == 5 {
			s += "; …"
			break
		}
		s += fmt.Sprintf("; %s (%s)", r.Title, r.ID)
		if r.Peak != nil {
			s += fmt.Sprintf(": peak %s total tok/s", num(r.Peak.TotalTokS))
		}
	}
	if l.NextCursor != nil {
		s += "; more with cursor=" + *l.NextCursor
	}
	return s
}

func sumRun(body []byte) string {
	var r api.Run
	if json.Unmarshal(body, &r) != nil {
		return unread(body)
	}
	return fmt.Sprintf("run %s: %s, %s, %s", r.ID, r.Title, count(len(r.Decode), "decode cell", "decode cells"), count(len(r.Prefill), "prefill cell", "prefill cells"))
}

func sumLeaderboard(body []byte) string {
	var l api.Leaderboard
	if json.Unmarshal(body, &l) != nil {
		return unread(body)
	}
	s := fmt.Sprintf("%s ranked by %s at %d context tokens × %d concurrent requests", count(len(l.Items), "run", "runs"), l.Metric, l.ContextTokens, l.Concurrency)
	for i, e := range l.Items {
		if i == 3 {
			s += "; …"
			break
		}
		s += fmt.Sprintf("; %d. %s (%s): %s", e.Rank, e.Run.Title, e.Run.ID, num(e.Value))
		if e.Prediction != nil {
			s += " (" + string(e.Prediction.Basis.Method) + ")"
		}
	}
	return s
}

func sumComparison(body []byte) string {
	var c api.Comparison
	if json.Unmarshal(body, &c) != nil {
		return unread(body)
	}
	s := fmt.Sprintf("%s compared over %s, baseline %s", count(len(c.Runs), "run", "runs"), count(len(c.Cells), "cell", "cells"), strings.Join(c.RunIDs[:min(1, len(c.RunIDs))], ""))
	if c.Verdict != nil {
		s += fmt.Sprintf("; verdict %s: %s", c.Verdict.Verdict, c.Verdict.Why)
	}
	return s
}

func sumDecode(body []byte) string {
	var d api.DecodePrediction
	if json.Unmarshal(body, &d) != nil {
		return unread(body)
	}
	s := fmt.Sprintf("%d context tokens × %d concurrent requests: %s", d.ContextTokens, d.Concurrency, d.Status)
	if d.TotalTokS != nil {
		s += fmt.Sprintf("; total %s tok/s (%s–%s)", num(d.TotalTokS.Value), num(d.TotalTokS.Low), num(d.TotalTokS.High))
	}
	if d.PerRequestTokS != nil {
		s += fmt.Sprintf("; per request %s tok/s", num(d.PerRequestTokS.Value))
	}
	return s + fmt.Sprintf("; basis %s from runs %s", d.Basis.Method, strings.Join(d.Basis.RunIDs, ", "))
}

func sumCapacity(body []byte) string {
	var c api.CapacityEstimate
	if json.Unmarshal(body, &c) != nil {
		return unread(body)
	}
	s := fmt.Sprintf("at %d context tokens: up to %d concurrent requests fit", c.ContextTokens, c.MaxConcurrency)
	if c.MaxContextTokens != nil && c.Concurrency != nil {
		s += fmt.Sprintf("; at %d concurrent requests, up to %d context tokens", *c.Concurrency, *c.MaxContextTokens)
	}
	return s + fmt.Sprintf("; basis %s from runs %s", c.Basis.Method, strings.Join(c.Basis.RunIDs, ", "))
}

func sumPlan(body []byte) string {
	var p api.CapacityPlan
	if json.Unmarshal(body, &p) != nil {
		return unread(body)
	}
	s := fmt.Sprintf("%s from %s", count(len(p.Options), "option", "options"), count(p.MatchedRuns, "matching run", "matching runs"))
	for i, o := range p.Options {
		if i == 3 {
			s += "; …"
			break
		}
		s += fmt.Sprintf("; %d. %d× %s, %s on %s (%s), concurrency %d", i+1, o.GPUCount, o.GPU, o.Model, o.Engine, o.RunID, o.Concurrency)
		if o.Instances != nil {
			s += fmt.Sprintf(", %d instances", *o.Instances)
		}
		if !o.Meets {
			s += ", falls short"
		}
	}
	return s
}

func sumModels(body []byte) string {
	var m api.ModelCatalog
	if json.Unmarshal(body, &m) != nil {
		return unread(body)
	}
	return count(len(m.Items), "model", "models") + " with runs"
}

func sumHardware(body []byte) string {
	var h api.HardwareList
	if json.Unmarshal(body, &h) != nil {
		return unread(body)
	}
	return count(len(h.Items), "GPU", "GPUs") + " in the hardware catalog"
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func unread(body []byte) string { return fmt.Sprintf("answer of %d bytes", len(body)) }

// num writes a figure as the API gives it, without trailing zeros.
func num(f float64) string { return fmt.Sprintf("%g", f) }
