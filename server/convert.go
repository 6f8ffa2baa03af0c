package server

import (
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/msg"
	"github.com/matrixd/matrixd/store"
)

// opt maps the store's "absent" empty string to JSON null.
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optDate maps a stored day (YYYY-MM-DD; empty when absent) to JSON; a
// day that does not parse, which validation keeps out, is absent too.
func optDate(s string) *openapi_types.Date {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil
	}
	return &openapi_types.Date{Time: t}
}

func toAPIRun(r store.Run) api.Run {
	notes := r.Launch.Notes
	if notes == nil {
		notes = []string{}
	}
	flags := r.Launch.Flags
	if flags == nil {
		flags = map[string]string{}
	}
	out := api.Run{
		ID: r.ID, Title: r.Title, Notes: opt(r.Notes), Submitter: opt(r.Submitter), SubmittedBy: opt(r.SubmittedBy),
		CreatedAt: r.CreatedAt, SourceURL: opt(r.SourceURL),
		Publisher: opt(r.Publisher), License: opt(r.License), RetrievedAt: optDate(r.RetrievedAt),
		Model: api.Model{Name: r.Model.Name, Quantization: opt(r.Model.Quantization)},
		Hardware: api.Hardware{
			Type: opt(r.Hardware.Type), GPU: r.Hardware.GPU, GPUCount: r.Hardware.GPUCount, VRAMGB: r.Hardware.VRAMGB,
			CPU: opt(r.Hardware.CPU), CPUCores: r.Hardware.CPUCores, RAMGB: r.Hardware.RAMGB, OS: opt(r.Hardware.OS),
			DriverVersion: opt(r.Hardware.DriverVersion), PowerLimitW: r.Hardware.PowerLimitW, AvgPowerW: r.Hardware.AvgPowerW, Pcie: opt(r.Hardware.PCIe),
		},
		Engine: api.Engine{
			Name: r.Engine.Name, Version: opt(r.Engine.Version), Quantization: opt(r.Engine.Quantization),
			Backend: opt(r.Engine.Backend), Repository: opt(r.Engine.Repository), Build: opt(r.Engine.Build),
		},
		Benchmark: api.Benchmark{
			Tool: opt(r.Benchmark.Tool), ToolVersion: opt(r.Benchmark.ToolVersion), ServedModel: opt(r.Benchmark.ServedModel),
			Revision: opt(r.Benchmark.Revision), DecodeTest: opt(r.Benchmark.DecodeTest), PrefillMode: opt(r.Benchmark.PrefillMode),
			SecondsPerMeasurement: r.Benchmark.SecondsPerMeasurement, MaxOutputTokens: r.Benchmark.MaxOutputTokens,
		},
		Launch: api.Launch{
			Command: opt(r.Launch.Command), Notes: notes, MaxModelLen: r.Launch.MaxModelLen,
			GPUMemoryUtilization: r.Launch.GPUMemoryUtilization, MaxNumSeqs: r.Launch.MaxNumSeqs,
			KVCacheDtype: opt(r.Launch.KVCacheDtype), AttentionBackend: opt(r.Launch.AttentionBackend),
			EnablePrefixCaching: r.Launch.EnablePrefixCaching, Flags: flags,
		},
		Prefill:    make([]api.PrefillCell, len(r.Prefill)),
		Decode:     make([]api.DecodeCell, len(r.Decode)),
		Provenance: toAPIProvenance(r),
		Moderation: toAPIModeration(r.Moderation),
	}
	for i, c := range r.Prefill {
		out.Prefill[i] = toAPIPrefillCell(c)
	}
	for i, c := range r.Decode {
		out.Decode[i] = toAPIDecodeCell(c)
	}
	out.Method, out.Trust, out.Corroboration = toAPIMethod(r.MethodOf()), toAPITrust(r.Trust), toAPICorroboration(r.Corroboration)
	return out
}

// toAPICorroboration maps a run's corroboration; a run not judged yet
// (nil) is uncorroborated.
func toAPICorroboration(c *store.Corroboration) api.Corroboration {
	none := msg.New("trust.corroboration_not_judged")
	out := api.Corroboration{Status: api.Uncorroborated, References: []api.CorroborationReference{}, Detail: none.Text, Notice: toAPINotice(none)}
	if c == nil {
		return out
	}
	out.Status, out.Sources, out.Detail, out.CopyOf = api.CorroborationStatus(c.Status), c.Sources, c.Detail, opt(c.CopyOf)
	out.Notice = storedNotice(c.DetailCode, c.DetailParams, c.DetailParts, c.Detail)
	for _, r := range c.References {
		out.References = append(out.References, api.CorroborationReference{RunID: r.RunID, Kind: api.CorroborationReferenceKind(r.Kind), Ratio: r.Ratio})
	}
	return out
}

// corroborationStatus is status as the API names it ("" is a run not
// judged yet: uncorroborated).
func corroborationStatus(status string) api.CorroborationStatus {
	if status == "" {
		return api.Uncorroborated
	}
	return api.CorroborationStatus(status)
}

func toAPIMethod(m store.Method) api.Method {
	out := api.Method{Class: api.MethodClass(m.Class), MeasurementS: m.MeasurementS, OutputTokensPerRequest: m.OutputTokensPerRequest}
	if m.Prefill != "" {
		p := api.MethodPrefill(m.Prefill)
		out.Prefill = &p
	}
	return out
}

// toAPITrust maps a run's checks; a run not checked yet (nil) has none.
func toAPITrust(t *store.Trust) api.Trust {
	out := api.Trust{Flags: []api.TrustFlag{}, Checks: []api.TrustCheck{}}
	if t == nil {
		return out
	}
	out.Flagged, out.RulesVersion = t.Flagged, t.RulesVersion
	for _, f := range t.Flags {
		out.Flags = append(out.Flags, api.TrustFlag{Code: api.TrustFlagCode(f.Code), Message: f.Message, Notice: storedNotice(f.MessageCode, f.MessageParams, f.MessageParts, f.Message), ContextTokens: f.ContextTokens,
			Concurrency: f.Concurrency, Measured: f.Measured, Limit: f.Limit, Unit: f.Unit})
	}
	for _, c := range t.Checks {
		out.Checks = append(out.Checks, api.TrustCheck{Code: api.TrustCheckCode(c.Code), Status: api.TrustCheckStatus(c.Status), Detail: c.Detail,
			Notice: storedNotice(c.DetailCode, c.DetailParams, c.DetailParts, c.Detail)})
	}
	return out
}

// storedNotice is a stored sentence's code and parameters; one stored
// before sentences had codes (the run is checked again by the current
// rules soon) is said whole, as trust.stored.
func storedNotice(code string, params map[string]string, parts map[string]store.Part, text string) api.Notice {
	return toAPINotice(store.Message(code, params, parts, text))
}

func toAPIPrefillCell(c store.PrefillCell) api.PrefillCell {
	return api.PrefillCell{ContextTokens: c.ContextTokens, Status: api.CellStatus(c.Status), PromptTokS: c.PromptTokS, TTFTMs: c.TTFTMs}
}

func toAPIDecodeCell(c store.DecodeCell) api.DecodeCell {
	return api.DecodeCell{
		ContextTokens: c.ContextTokens, Concurrency: c.Concurrency, Status: api.CellStatus(c.Status),
		TotalTokS: c.TotalTokS, PerRequestTokS: c.PerRequestTokS, TTFTMs: c.TTFTMs, TBTMs: c.TBTMs,
		AvgActiveRequests: c.AvgActiveRequests, CompletedRequests: c.CompletedRequests,
		OutputTokens: c.OutputTokens, DurationS: c.DurationS, AvgPowerW: c.AvgPowerW,
	}
}

func toAPISummary(s store.RunSummary) api.RunSummary {
	out := api.RunSummary{
		ID: s.ID, Title: s.Title, Model: s.ModelName, GPU: s.GPU, VRAMGB: s.VRAMGB,
		Engine: s.EngineName, EngineVersion: opt(s.EngineVersion), Quantization: opt(s.Quantization),
		Submitter: opt(s.Submitter), SubmittedBy: opt(s.SubmittedBy), CreatedAt: s.CreatedAt,
		SingleStreamTokS: s.SingleStreamTokS, SingleStreamContextTokens: s.SingleStreamContextTokens,
		MaxContextTokensWithOutput: s.MaxContextTokensWithOutput,
		MethodClass:                api.MethodClass(s.MethodClass), Flagged: s.Flagged, Corroboration: corroborationStatus(s.Corroboration),
		SourceURL: opt(s.SourceURL), Publisher: opt(s.Publisher), License: opt(s.License), RetrievedAt: optDate(s.RetrievedAt),
	}
	if s.Peak != nil {
		out.Peak = &api.PeakCell{TotalTokS: s.Peak.TotalTokS, ContextTokens: s.Peak.ContextTokens, Concurrency: s.Peak.Concurrency}
	}
	return out
}

// runFilter gathers the list filters shared by listRuns and getLeaderboard.
func runFilter(gpu, model, quant, engine, engineVersion, kvDtype, submitter, submittedBy *string, vramMin, vramMax *float64) store.RunFilter {
	v := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return store.RunFilter{
		GPU: v(gpu), Model: v(model), Quantization: v(quant), Engine: v(engine), EngineVersion: v(engineVersion),
		KVCacheDtype: v(kvDtype), Submitter: v(submitter), SubmittedBy: v(submittedBy), VRAMGBMin: vramMin, VRAMGBMax: vramMax,
	}
}
