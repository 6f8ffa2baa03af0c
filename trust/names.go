package trust

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// NameSize is a model's size as its name states it, in billions of
// parameters; 0 where the name does not say.
type NameSize struct {
	// Total is the parameters the name states ("70B", "8x7B" → 56, the
	// 30 of "30B-A3B"); Active those one token reads ("A3B"; a dense
	// model's total; a "17B-16E" mixture's 17).
	Total, Active float64
	// Dense is set when the name states one size only ("70B"): it reads
	// as a dense model, but nothing in it rules out a mixture of experts
	// that names its total only (a "35B" fine-tune of a 35B-A3B model).
	Dense bool
}

var (
	sizeToken    = regexp.MustCompile(`(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)([bmt])(?:[^a-z0-9]|$)`)
	expertsToken = regexp.MustCompile(`(?:^|[^a-z0-9.])(\d+)x(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)`)
	activeToken  = regexp.MustCompile(`(?:^|[^a-z0-9.])a(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)`)
	expertCount  = regexp.MustCompile(`(?:^|[^a-z0-9.])\d+e(?:[^a-z0-9]|$)`)
)

// SizeFromName reads a model's size from its name: "Llama-3.1-70B" is 70B
// dense, "Qwen3-30B-A3B" 30B with 3B active, "Mixtral-8x7B" 56B whose
// active part the name does not say, "Llama-4-Scout-17B-16E" 17B active,
// "opt-125m" 0.125B. ok is false when the name states no size. A mixture
// of experts whose name states only its total ("8x7B", or "MoE" without
// "A…B") has Active 0: the name does not say what one token reads.
func SizeFromName(name string) (NameSize, bool) {
	s := strings.ToLower(strings.NewReplacer("_", "-", " ", "-", "/", "-").Replace(name))
	var out NameSize
	if m := activeToken.FindStringSubmatch(s); m != nil {
		out.Active = parseB(m[1], "b")
	}
	if m := expertsToken.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		out.Total = float64(n) * parseB(m[2], "b")
		return out, out.Total > 0
	}
	for _, m := range sizeToken.FindAllStringSubmatchIndex(s, -1) {
		if m[0] < len(s) && m[2] > 0 && s[m[2]-1] == 'a' && out.Active > 0 {
			continue // the A of "A3B"
		}
		out.Total = parseB(s[m[2]:m[3]], s[m[4]:m[5]])
		break
	}
	if out.Total == 0 && out.Active == 0 {
		return NameSize{}, false
	}
	switch {
	case out.Active > 0:
	case expertCount.MatchString(s):
		out.Active, out.Total = out.Total, 0
	case !strings.Contains(s, "moe"):
		out.Active, out.Dense = out.Total, true
	}
	return out, true
}

func parseB(num, unit string) float64 {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	switch unit {
	case "m":
		return v / 1000
	case "t":
		return v * 1000
	}
	return v
}

// sizeAgreement is how far a size read from a name may be from the table's
// entry and still mean it: names round (7B for 6.74B, 8x7B for 46.7B).
const sizeAgreement = 1.5

// agrees reports whether the size a name states fits entry m.
func (n NameSize) agrees(m Model) bool {
	within := func(a, b float64) bool {
		return a == 0 || b == 0 || math.Max(a, b)/math.Min(a, b) <= sizeAgreement
	}
	if n.Active == n.Total {
		// A dense reading of the name: only its total is stated.
		return within(n.Total, m.ParamsB)
	}
	return within(n.Total, m.ParamsB) && within(n.Active, m.ActiveParams())
}

// ModelFromName is the Model a name's stated size makes when the table has
// no entry: the parameters one token reads and nothing of its attention
// geometry (KV not counted: a looser bound). ok is false when the name
// does not say what one token reads.
func ModelFromName(name string) (Model, bool) {
	n, ok := SizeFromName(name)
	if !ok || n.Active <= 0 {
		return Model{}, false
	}
	m := Model{Name: clip(name), ParamsB: n.Total, FromName: true, DenseByName: n.Dense, Source: "the size its name states"}
	if fam, ok := denseFamily(name); ok && n.Dense {
		// Every release of the family is dense: the one size the name
		// states is what a token reads.
		m.DenseByName = false
		m.Source = "the size its name states; " + fam.Family + " publishes dense models only (" + fam.Source + ")"
	}
	if m.ParamsB == 0 {
		m.ParamsB = n.Active
	}
	if n.Active != m.ParamsB {
		a := n.Active
		m.ActiveParamsB = &a
	}
	return m, true
}

// DenseFamily is a family of models whose every release is dense: a name
// of it that states one size ("…-Qwen2.5-Coder-14B-…") states what one
// token reads, fine-tunes and quantizations alike.
type DenseFamily struct {
	Family string
	// Match are lower-case substrings of a model name ("_", " " and ":"
	// read as "-") that mean the family.
	Match  []string
	Source string
}

// DenseFamilies are the families of models trust reads as dense from the
// size their names state; each source is the family's list of releases
// (SOURCES.md).
func DenseFamilies() []DenseFamily {
	return []DenseFamily{
		{Family: "Qwen2.5", Match: []string{"qwen2.5-", "qwen2-5-"}, Source: "https://huggingface.co/collections/Qwen/qwen25-66e81a666513e518adb90d9e"},
		{Family: "Qwen2.5-Coder", Match: []string{"qwen2.5-coder"}, Source: "https://huggingface.co/collections/Qwen/qwen25-coder-66eaa22e6f99801bf65b0c2f"},
		{Family: "DeepSeek-R1-Distill", Match: []string{"deepseek-r1-distill-"}, Source: "https://huggingface.co/deepseek-ai/DeepSeek-R1#deepseek-r1-distill-models"},
		{Family: "Llama 3.1, 3.2, 3.3", Match: []string{"llama-3.1-", "llama3.1-", "llama-3.2-", "llama3.2-", "llama-3.3-", "llama3.3-"}, Source: "https://huggingface.co/collections/meta-llama/llama-32-66f448ffc8c32f949b04c8cf"},
		{Family: "Gemma 2", Match: []string{"gemma-2-", "gemma2-"}, Source: "https://huggingface.co/collections/google/gemma-2-release-667d6600fd5220e7b967f315"},
		{Family: "Gemma 3", Match: []string{"gemma-3-", "gemma3-"}, Source: "https://huggingface.co/collections/google/gemma-3-release-67c6c6f89c4f76621268bb6d"},
		{Family: "Ministral, Codestral 22B", Match: []string{"ministral-", "codestral-22b"}, Source: "https://docs.mistral.ai/getting-started/models/"},
		{Family: "Falcon3", Match: []string{"falcon3-"}, Source: "https://huggingface.co/collections/tiiuae/falcon3-67605ae03578be86e4e87026"},
		{Family: "SmolLM2, SmolLM3", Match: []string{"smollm2-", "smollm3-"}, Source: "https://huggingface.co/HuggingFaceTB/SmolLM3-3B"},
		{Family: "Yi-1.5", Match: []string{"yi-1.5-"}, Source: "https://huggingface.co/collections/01-ai/yi-15-2024-05-663f3ecab5f815a3eaca7ca8"},
	}
}

// denseFamily is the dense family name belongs to.
func denseFamily(name string) (DenseFamily, bool) {
	s := normalName(name)
	for _, f := range DenseFamilies() {
		for _, p := range f.Match {
			if strings.Contains(s, p) && !strings.Contains(s, "moe") {
				return f, true
			}
		}
	}
	return DenseFamily{}, false
}

// normalName is a model name as the tables match it: lower case, with
// "_", " " and ":" (Ollama's tags) read as "-".
func normalName(name string) string {
	return strings.NewReplacer("_", "-", " ", "-", ":", "-").Replace(strings.ToLower(name))
}

var mtpTag = regexp.MustCompile(`(?:^|[^a-z])mtp(?:[^a-z]|$)`)

// SpecDecodeName reports whether a model name asks for speculative
// decoding: Ollama's "…:27b-mtp-q8_0" runs the model's multi-token
// prediction head, several tokens per weight read.
func SpecDecodeName(name string) bool { return mtpTag.MatchString(strings.ToLower(name)) }

// OllamaTag reports whether a model name is an Ollama tag ("qwen3:8b",
// "llama3.2:3b"): its weights are the tag's quantization (4-bit by
// default), not the model's published checkpoint.
func OllamaTag(name string) bool {
	s := strings.ToLower(name)
	return strings.Contains(s, ":") && !strings.Contains(s, ".gguf") && !strings.Contains(s, "://")
}
