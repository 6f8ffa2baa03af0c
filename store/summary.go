package store

import "time"

// RunSummary is a run's identity and headline figures, for lists.
type RunSummary struct {
	ID            string
	Title         string
	ModelName     string
	GPU           string
	VRAMGB        *float64
	EngineName    string
	EngineVersion string
	Quantization  string
	Submitter     string
	SubmittedBy   string
	CreatedAt     time.Time
	// SingleStreamTokS is the total tok/s of the valid concurrency-1 cell
	// at the smallest context that has one.
	SingleStreamTokS          *float64
	SingleStreamContextTokens *int
	// Peak is the valid cell with the highest total tok/s.
	Peak *PeakCell
	// MaxContextTokensWithOutput is the largest context at which a decode
	// cell produced output tokens.
	MaxContextTokensWithOutput *int
	// MethodClass is the class of the run's method; Flagged whether a
	// plausibility check flagged it.
	MethodClass string
	Flagged     bool
	// Corroboration is the run's corroboration status.
	Corroboration string
	// SourceURL, Publisher, License and RetrievedAt are where the run came
	// from (see Run); empty when not stated.
	SourceURL, Publisher, License, RetrievedAt string
}

// PeakCell locates a run's highest total tok/s.
type PeakCell struct {
	TotalTokS     float64
	ContextTokens int
	Concurrency   int
}

// Summarize derives the run's summary from its cells.
func Summarize(r Run) RunSummary {
	s := RunSummary{
		ID: r.ID, Title: r.Title, ModelName: r.Model.Name, GPU: r.Hardware.GPU, VRAMGB: r.Hardware.VRAMGB,
		EngineName: r.Engine.Name, EngineVersion: r.Engine.Version, Quantization: r.Model.Quantization,
		Submitter: r.Submitter, SubmittedBy: r.SubmittedBy, CreatedAt: r.CreatedAt,
		MethodClass: r.MethodOf().Class, Flagged: r.Trust != nil && r.Trust.Flagged, Corroboration: CorroborationUncorroborated,
	}
	if r.Corroboration != nil {
		s.Corroboration = r.Corroboration.Status
	}
	if s.Quantization == "" {
		s.Quantization = r.Engine.Quantization
	}
	for _, c := range r.Decode {
		if c.Status == StatusValid && c.TotalTokS != nil {
			if c.Concurrency == 1 && (s.SingleStreamContextTokens == nil || c.ContextTokens < *s.SingleStreamContextTokens) {
				s.SingleStreamTokS, s.SingleStreamContextTokens = ptr(*c.TotalTokS), ptr(c.ContextTokens)
			}
			if s.Peak == nil || *c.TotalTokS > s.Peak.TotalTokS {
				s.Peak = &PeakCell{TotalTokS: *c.TotalTokS, ContextTokens: c.ContextTokens, Concurrency: c.Concurrency}
			}
		}
		produced := (c.OutputTokens != nil && *c.OutputTokens > 0) || (c.OutputTokens == nil && c.TotalTokS != nil && *c.TotalTokS > 0)
		if produced && (s.MaxContextTokensWithOutput == nil || c.ContextTokens > *s.MaxContextTokensWithOutput) {
			s.MaxContextTokensWithOutput = ptr(c.ContextTokens)
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
