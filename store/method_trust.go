package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/matrixd/matrixd/msg"
)

// Trust is the outcome of a run's plausibility checks, made by the caller
// of the store (the rules are not the store's) and stored with the run.
type Trust struct {
	Flagged bool `json:"flagged"`
	// RulesVersion is the version of the rules that made the checks; a run
	// checked by older rules (or never: 0) is checked again.
	RulesVersion int          `json:"rules_version"`
	Flags        []TrustFlag  `json:"flags"`
	Checks       []TrustCheck `json:"checks"`
}

// TrustFlag is one cell that failed a check, with the numbers compared.
type TrustFlag struct {
	Code          string  `json:"code"`
	Message       string  `json:"message"`
	ContextTokens int     `json:"context_tokens"`
	Concurrency   int     `json:"concurrency"`
	Measured      float64 `json:"measured"`
	Limit         float64 `json:"limit"`
	Unit          string  `json:"unit"`
	// MessageCode and MessageParams are Message's code and parameters
	// (empty in checks stored before messages had codes).
	MessageCode   string            `json:"message_code,omitempty"`
	MessageParams map[string]string `json:"message_params,omitempty"`
	MessageParts  map[string]Part   `json:"message_parts,omitempty"`
}

// Part is a clause of a stored sentence that has a code of its own: its
// code, parameters and clauses.
type Part struct {
	Code   string            `json:"code"`
	Params map[string]string `json:"params,omitempty"`
	Parts  map[string]Part   `json:"parts,omitempty"`
}

// Message is a sentence stored with a run (a check's detail, a flag, a
// corroboration) as the message it was made from: its code, parameters
// and clauses. A sentence stored before codes were kept says its English
// alone, as trust.stored.
func Message(code string, params map[string]string, parts map[string]Part, text string) msg.Message {
	if code == "" {
		return msg.New("trust.stored", text)
	}
	m := msg.Of(code, params, text)
	for name, p := range parts {
		if m.Parts == nil {
			m.Parts = map[string]msg.Message{}
		}
		m.Parts[name] = Message(p.Code, p.Params, p.Parts, params[name])
	}
	return m
}

// TrustCheck is one check's outcome for the whole run.
type TrustCheck struct {
	Code   string `json:"code"`
	Status string `json:"status"` // passed, flagged or not_checked
	Detail string `json:"detail"`
	// DetailCode and DetailParams are Detail's code and parameters (empty
	// in checks stored before messages had codes).
	DetailCode   string            `json:"detail_code,omitempty"`
	DetailParams map[string]string `json:"detail_params,omitempty"`
	DetailParts  map[string]Part   `json:"detail_parts,omitempty"`
}

// Statuses of a TrustCheck.
const (
	CheckPassed     = "passed"
	CheckFlagged    = "flagged"
	CheckNotChecked = "not_checked"
)

// runsToCheck reads runs_by_trust_version for the versions either side of
// the current one (with "<>", or in id order, it read every run, at every
// start).
const runsToCheck = "SELECT id FROM runs WHERE trust_version < ? OR trust_version > ? LIMIT ?"

// RunsToCheck returns up to limit ids of runs whose checks were not made
// by rules version rulesVersion (never checked, or by other rules).
func (s *Store) RunsToCheck(ctx context.Context, rulesVersion, limit int) ([]string, error) {
	rows, err := s.writer.QueryContext(ctx, runsToCheck, rulesVersion, rulesVersion, limit)
	if err != nil {
		return nil, fmt.Errorf("runs to check: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs to check: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// SetTrust stores the checks of run id (made again, by newer rules). A run
// deleted meanwhile is not an error: there is nothing left to check.
func (s *Store) SetTrust(ctx context.Context, id string, t Trust) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE runs SET trust_checks = ?, flagged = ?, trust_version = ? WHERE id = ?",
			string(b), boolInt(t.Flagged), t.RulesVersion, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set trust of run %s: %w", id, err)
	}
	return nil
}
