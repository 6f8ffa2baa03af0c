package server

import (
	"math"
	"slices"
	"strconv"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/predict"
)

// The calculator's answers in the API's shapes.

func warnings(lists ...[]msg.Message) ([]string, []api.Notice) {
	texts, notices := []string{}, []api.Notice{}
	for _, l := range lists {
		for _, m := range l {
			texts, notices = append(texts, m.Text), append(notices, toAPINotice(m))
		}
	}
	return texts, notices
}

// refusalMessage is what r.Error() says, with its code and parameters.
func refusalMessage(r *calculator.Refusal) msg.Message {
	if r.Supported == "" {
		return r.Message
	}
	return msg.New("calculator.refused_supported", r.Message, r.SupportedMessage)
}

// notice is m's code and parameters, nil for no message.
func notice(m msg.Message) *api.Notice {
	if m.Code == "" {
		return nil
	}
	n := toAPINotice(m)
	return &n
}

// toAPINotice is a message's code and parameters.
func toAPINotice(m msg.Message) api.Notice {
	n := api.Notice{Code: m.Code, Params: m.Map()}
	for name, p := range m.Parts {
		if p.Code == "" {
			continue
		}
		if n.Parts == nil {
			n.Parts = &map[string]api.Notice{}
		}
		(*n.Parts)[name] = toAPINotice(p)
	}
	return n
}

// ToAPIDecode is a decode answer as GET /v1/calculator/decode gives it.
func ToAPIDecode(q calculator.Query, a predict.Answer[calculator.Prediction]) api.DecodePrediction {
	p := a.Result
	out := api.DecodePrediction{
		ContextTokens: q.ContextTokens, Concurrency: q.Concurrency, Status: api.CalcStatus(p.Status),
		TotalTokS: estimate(p.TotalTokS), PerRequestTokS: estimate(p.PerRequestTokS), TBTMs: estimate(p.TBTMs), TTFTMs: estimate(p.TTFTMs),
		Capacity: toAPIKVCapacity(p.Capacity),
		Basis:    basis(p.Basis, p.SpeedBasis, a.RunIDs, a.Sources, p.Cells),
	}
	out.Warnings, out.Notices = warnings(a.Warnings, p.Warnings)
	if p.TotalTokS != nil && (p.SpeedBasis != calculator.Measured || p.Basis == calculator.ScaledGPU || p.Basis == calculator.ScaledModel) {
		out.Basis.ErrorBandPct = &api.ErrorBand{TotalTokS: sig6(100 * p.BandTotal), TBTMs: sig6(100 * p.BandTBT)}
	}
	return out
}

// toAPIKVCapacity is a decode answer's capacity; an unknown one has
// null figures (its sequence limit, a launch's or the run's, stands).
func toAPIKVCapacity(c calculator.Capacity) api.KVCapacity {
	out := api.KVCapacity{SequenceLimit: nonZero(c.SequenceLimit)}
	if c.Unknown {
		return out
	}
	out.ReservedTokens, out.KVTokensLow, out.KVTokensHigh = &c.ReservedTokens, &c.KVTokensLow, nonZero(c.KVTokensHigh)
	out.MaxConcurrencyAtContext = &c.MaxConcurrencyAtContext
	return out
}

// ToAPIPricedDecode is a decode answer with its cost (nil without a
// price) and the warnings pricing it gave.
func ToAPIPricedDecode(q calculator.Query, a predict.Answer[calculator.Prediction], cost *calculator.Cost, warn []msg.Message) api.DecodePrediction {
	out := ToAPIDecode(q, a)
	out.Cost = toAPICost(cost)
	out.Warnings, out.Notices = warnings(a.Warnings, a.Result.Warnings, warn)
	return out
}

// ToAPICapacity is a capacity answer as GET /v1/calculator/capacity gives it.
func ToAPICapacity(q calculator.Query, ans predict.Answer[calculator.CapacityAnswer]) api.CapacityEstimate {
	a := ans.Result
	out := api.CapacityEstimate{
		ContextTokens: a.ContextTokens, MaxConcurrency: a.MaxConcurrency, MaxConcurrencyPossible: a.MaxConcurrencyPossible,
		KVTokensLow: a.KVTokensLow, KVTokensHigh: nonZero(a.KVTokensHigh), SequenceLimit: nonZero(a.SequenceLimit),
		MaxOutputTokens: a.MaxOutputTokens, Basis: basis(a.Basis, calculator.NoSpeed, ans.RunIDs, ans.Sources, nil),
	}
	out.Warnings, out.Notices = warnings(ans.Warnings, a.Warnings)
	if q.Concurrency > 0 {
		out.Concurrency, out.MaxContextTokens = &a.Concurrency, a.MaxContextTokens
	}
	return out
}

// ToAPIGrid is a grid as GET /v1/calculator/grid gives it.
func ToAPIGrid(a predict.Answer[predict.Grid]) api.GridPrediction {
	g := a.Result
	out := api.GridPrediction{RunIDs: a.RunIDs, Sources: max(1, a.Sources), Contexts: g.Contexts, Concurrencies: g.Concurrencies,
		Rows: make([]api.GridRow, len(g.Contexts))}
	out.Warnings, out.Notices = warnings(a.Warnings)
	for i, l := range g.Contexts {
		out.Rows[i] = api.GridRow{ContextTokens: l, Cells: make([]api.GridCell, 0, len(g.Concurrencies))}
	}
	for _, gc := range g.Cells {
		i, _ := slices.BinarySearch(g.Contexts, gc.ContextTokens)
		cell := api.GridCell{Concurrency: gc.Concurrency}
		if gc.Refusal != nil {
			cell.Status, cell.Method, cell.Refusal = "refused", api.GridCellMethod(calculator.NoSpeed), opt(gc.Refusal.Error())
			cell.RefusalNotice = notice(refusalMessage(gc.Refusal))
		} else {
			p := gc.Prediction
			cell.Status, cell.Method = api.GridCellStatus(p.Status), api.GridCellMethod(p.Basis)
			cell.TotalTokS, cell.PerRequestTokS, cell.TBTMs, cell.TTFTMs = estimate(p.TotalTokS), estimate(p.PerRequestTokS), estimate(p.TBTMs), estimate(p.TTFTMs)
		}
		out.Rows[i].Cells = append(out.Rows[i].Cells, cell)
	}
	return out
}

// ToAPIPricedGrid is a grid with its cells' costs (as GridCosts gives
// them) and the warnings pricing it gave.
func ToAPIPricedGrid(a predict.Answer[predict.Grid], costs []*calculator.Cost, warn []msg.Message) api.GridPrediction {
	out := ToAPIGrid(a)
	for i, gc := range a.Result.Cells {
		row, _ := slices.BinarySearch(a.Result.Contexts, gc.ContextTokens)
		col, _ := slices.BinarySearch(a.Result.Concurrencies, gc.Concurrency)
		out.Rows[row].Cells[col].Cost = toAPICost(costs[i])
	}
	out.Warnings, out.Notices = warnings(a.Warnings, warn)
	return out
}

// ToAPIPrefill is a prefill answer as GET /v1/calculator/prefill gives it.
func ToAPIPrefill(contextTokens int, a predict.Answer[calculator.PrefillPrediction]) api.PrefillPrediction {
	p := a.Result
	out := api.PrefillPrediction{
		ContextTokens: contextTokens, TTFTMs: *estimate(&p.TTFTMs), PromptTokS: *estimate(&p.PromptTokS),
		Basis: basis(p.Basis, calculator.NoSpeed, a.RunIDs, a.Sources, nil),
	}
	out.Warnings, out.Notices = warnings(a.Warnings, p.Warnings)
	for _, l := range p.Contexts {
		out.Basis.Cells = append(out.Basis.Cells, api.CellRef{ContextTokens: l, Concurrency: 1})
	}
	return out
}

func toAPICandidates(amb *predict.Ambiguous) []api.CandidateRun {
	out := make([]api.CandidateRun, len(amb.Candidates))
	for i, r := range amb.Candidates {
		out[i] = api.CandidateRun{ID: r.ID, Title: r.Title, Model: r.ModelName, VRAMGB: r.VRAMGB,
			Quantization: opt(r.Quantization), EngineVersion: opt(r.EngineVersion), KVCacheDtype: opt(r.KVCacheDtype),
			AttentionBackend: opt(r.AttentionBackend)}
	}
	return out
}

// estimate rounds to a thousandth: more digits than any measurement has,
// without float noise (279.15000000000003) in the answer.
// toAPICost is a cost as the calculator's answers carry it.
func toAPICost(c *calculator.Cost) *api.Cost {
	if c == nil {
		return nil
	}
	out := &api.Cost{Pricing: api.Rented, Gpus: c.GPUs, USDPerHour: sig6p(c.USDPerHour),
		USDPerMillionOutputTokens: sig6e(c.USDPerMillion), JoulesPerOutputToken: sig6e(c.JoulesPerToken)}
	if c.Owned {
		out.Pricing = api.Owned
	}
	if c.Power != nil {
		src := api.CostPowerSource(c.Power.Source)
		out.PowerW, out.PowerSource = &c.Power.WattsPerGPU, &src
	}
	return out
}

// sig6 rounds a cost to 6 significant digits: costs span cents to
// thousands, so the speeds' 3 decimals would drop a cheap one's digits.
func sig6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return f
}

func sig6p(v *float64) *float64 {
	if v == nil {
		return nil
	}
	r := sig6(*v)
	return &r
}

func sig6e(e *calculator.Estimate) *api.Estimate {
	if e == nil {
		return nil
	}
	return &api.Estimate{Value: sig6(e.Value), Low: sig6(e.Low), High: sig6(e.High)}
}

func estimate(e *calculator.Estimate) *api.Estimate {
	if e == nil {
		return nil
	}
	r := func(v float64) float64 { return math.Round(v*1000) / 1000 }
	return &api.Estimate{Value: r(e.Value), Low: r(e.Low), High: r(e.High)}
}

func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// basis is how an answer was obtained; sources the independent sources it
// pools (an answer built from one run's fit says 0: it rests on that run).
func basis(method, speed calculator.Basis, ids []string, sources int, cells []calculator.CellRef) api.CalcBasis {
	b := api.CalcBasis{Method: api.CalcBasisMethod(method), SpeedMethod: api.CalcBasisSpeedMethod(speed), RunIDs: ids, Sources: max(1, sources), Cells: []api.CellRef{}}
	if speed == calculator.ScaledVRAM || speed == calculator.ScaledGPU || speed == "" {
		b.SpeedMethod = api.CalcBasisSpeedMethod(calculator.NoSpeed)
	}
	for _, c := range cells {
		b.Cells = append(b.Cells, api.CellRef{ContextTokens: c.ContextTokens, Concurrency: c.Concurrency})
	}
	return b
}
