package trust

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// modelsJSON is the model facts table; SOURCES.md names where each entry
// was read.
//
//go:embed models.json
var modelsJSON []byte

// Model is what the checks need to know of a model, from its own
// config.json or model card.
type Model struct {
	Name  string   `json:"name"`
	Match []string `json:"match"` // lower-case substrings of the run's model name that mean this model
	// ParamsB is the parameter count in billions; ActiveParamsB, for a
	// mixture of experts, those one token reads.
	ParamsB       float64  `json:"params_b"`
	ActiveParamsB *float64 `json:"active_params_b,omitempty"`
	Layers        int      `json:"layers,omitempty"`
	// KVLayers are the layers whose KV cache grows with the whole context
	// (full attention; a hybrid's linear or sliding layers do not count);
	// 0 when unknown, and then KV is not counted (a generous bound).
	KVLayers int `json:"kv_layers,omitempty"`
	// AttentionHeads are the query heads of each attention layer (more
	// than KVHeads with grouped-query attention); 0 when unknown.
	AttentionHeads int `json:"attention_heads,omitempty"`
	KVHeads        int `json:"kv_heads,omitempty"`
	HeadDim        int `json:"head_dim,omitempty"`
	// WeightsBits is the bits a weight takes in the model's own published
	// checkpoint (its config.json's torch_dtype or quantization_config), the
	// bits a run that states no quantization reads; 0 when not taken.
	WeightsBits float64 `json:"weights_bits,omitempty"`
	// FromName is set on a Model made by ModelFromName, not read from the
	// table.
	FromName bool `json:"-"`
	// DenseByName is set on such a Model when its name states one size
	// only: what one token reads is then a guess, and the bandwidth bound
	// is not judged on it (see bandwidth).
	DenseByName bool `json:"-"`
	// Source is where the figures were read (SOURCES.md says more).
	Source string `json:"source"`
}

// ActiveParams is the parameters one token reads, in billions.
func (m Model) ActiveParams() float64 {
	if m.ActiveParamsB != nil {
		return *m.ActiveParamsB
	}
	return m.ParamsB
}

// MixtureOfExperts reports whether a token reads fewer parameters than
// the model holds.
func (m Model) MixtureOfExperts() bool { return m.ActiveParams() < m.ParamsB }

// KVBytesPerToken is the KV cache one token of context takes across the
// full-attention layers (keys and values), at elem bytes an element; 0
// when the table lacks the geometry.
func (m Model) KVBytesPerToken(elem float64) float64 {
	return float64(m.KVLayers*m.KVHeads*m.HeadDim) * 2 * elem
}

// AttentionFLOPsPerContextToken is what attending to one more token of
// context costs a token, in FLOPs, across the full-attention layers (the
// scores and the weighted sum of values: 2 × 2 × layers × heads × head
// dimension); 0 when the table lacks the geometry.
func (m Model) AttentionFLOPsPerContextToken() float64 {
	return 4 * float64(m.KVLayers*m.AttentionHeads*m.HeadDim)
}

// Hybrid reports whether some of the model's layers keep no KV cache that
// grows with the context (linear attention, Mamba, sliding windows).
func (m Model) Hybrid() bool { return m.KVLayers > 0 && m.Layers > m.KVLayers }

// Models is the model facts table.
type Models struct{ models []Model }

// ModelFacts parses the embedded model facts table.
func ModelFacts() (*Models, error) { return ParseModels(modelsJSON) }

// ParseModels parses a model facts table.
func ParseModels(b []byte) (*Models, error) {
	var ms []Model
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, fmt.Errorf("model facts: %w", err)
	}
	for _, m := range ms {
		if m.Name == "" || len(m.Match) == 0 || m.ParamsB <= 0 || m.Source == "" {
			return nil, fmt.Errorf("model facts: %q needs a name, match, params_b and the source its figures were read from", m.Name)
		}
	}
	return &Models{models: ms}, nil
}

// All returns every entry.
func (t *Models) All() []Model { return append([]Model(nil), t.models...) }

// Lookup finds the model a run's model name means: the entry whose match
// is the longest substring of the name (lower case, "_", " " and ":" as "-"),
// unless the name states a size the entry's is not within 1.5× of
// ("DeepSeek-R1-Distill-Llama-8B" is not DeepSeek-R1's 671B).
func (t *Models) Lookup(name string) (Model, bool) {
	s := normalName(name)
	named, sized := SizeFromName(name)
	best, bestLen := Model{}, 0
	for _, m := range t.models {
		for _, p := range m.Match {
			if !strings.Contains(s, p) || (sized && !named.agrees(m)) {
				continue
			}
			// Of matches as long, the entry nearest the size the name
			// states ("qwen3.5-35b" is the 35B of a family's 27B and 35B).
			if len(p) > bestLen || (len(p) == bestLen && sized && nearer(named, m, best)) {
				best, bestLen = m, len(p)
			}
		}
	}
	return best, bestLen > 0
}

// nearer reports whether entry a is nearer than b to the total size n
// states.
func nearer(n NameSize, a, b Model) bool {
	if n.Total == 0 {
		return false
	}
	return math.Abs(math.Log(a.ParamsB/n.Total)) < math.Abs(math.Log(b.ParamsB/n.Total))
}
