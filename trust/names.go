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
	sizeToken       = regexp.MustCompile(`(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)([bmt])(?:[^a-z0-9]|$)`)
	expertsToken    = regexp.MustCompile(`(?:^|[^a-z0-9.])(\d+)x(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)`)
	activeToken     = regexp.MustCompile(`(?:^|[^a-z0-9.])a(\d+(?:\.\d+)?)([bm])(?:[^a-z0-9]|$)`)
	digitUnderscore = regexp.MustCompile(`(\d)_(\d)`)
	dottedActive    = regexp.MustCompile(`(\d[bm])\.?a(\d)`)
	expertCount     = regexp.MustCompile(`(?:^|[^a-z0-9.])\d+e(?:[^a-z0-9]|$)`)
)

// SizeFromName reads a model's size from its name: "Llama-3.1-70B" is 70B
// dense, "Qwen3-30B-A3B" 30B with 3B active, "Mixtral-8x7B" 56B whose
// active part the name does not say, "Llama-4-Scout-17B-16E" 17B active,
// "opt-125m" 0.125B. ok is false when the name states no size. A mixture
// of experts whose name states only its total ("8x7B", or "MoE" without
// "A…B") has Active 0: the name does not say what one token reads.
func SizeFromName(name string) (NameSize, bool) {
	// "internlm2_5-1_8b": an underscore between digits is a decimal point.
	s := strings.ToLower(strings.NewReplacer("_", "-", " ", "-", "/", "-").Replace(digitUnderscore.ReplaceAllString(name, "$1.$2")))
	s = dottedActive.ReplaceAllString(s, "$1-a$2") // llama.cpp's "30B.A3B", SmallThinker's "21BA3B"
	var out NameSize
	if m := activeToken.FindStringSubmatch(s); m != nil {
		out.Active = parseB(m[1], m[2])
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
		{Family: "DeepSeek-R1-Distill (Ollama's deepseek-r1:1.5b to :70b tags)", Match: []string{"deepseek-r1-distill-", "deepseek-r1-1.5b", "deepseek-r1-7b", "deepseek-r1-8b", "deepseek-r1-14b", "deepseek-r1-32b", "deepseek-r1-70b"}, Source: "https://huggingface.co/deepseek-ai/DeepSeek-R1#deepseek-r1-distill-models, https://ollama.com/library/deepseek-r1"},
		{Family: "Qwen2 (llama.cpp's qwen2 architecture; its mixture is qwen2moe)", Match: []string{"qwen2-"}, Source: "https://huggingface.co/collections/Qwen/qwen2-6659360b33528ced941e557f"},
		{Family: "Llama 3.1, 3.2, 3.3", Match: []string{"llama-3.1-", "llama3.1-", "llama-3.2-", "llama3.2-", "llama-3.3-", "llama3.3-"}, Source: "https://huggingface.co/collections/meta-llama/llama-32-66f448ffc8c32f949b04c8cf"},
		{Family: "Gemma 2", Match: []string{"gemma-2-", "gemma2-"}, Source: "https://huggingface.co/collections/google/gemma-2-release-667d6600fd5220e7b967f315"},
		{Family: "Gemma 3", Match: []string{"gemma-3-", "gemma3-"}, Source: "https://huggingface.co/collections/google/gemma-3-release-67c6c6f89c4f76621268bb6d"},
		{Family: "Ministral, Codestral 22B", Match: []string{"ministral-", "codestral-22b"}, Source: "https://docs.mistral.ai/getting-started/models/"},
		{Family: "Falcon3", Match: []string{"falcon3-"}, Source: "https://huggingface.co/collections/tiiuae/falcon3-67605ae03578be86e4e87026"},
		{Family: "SmolLM2, SmolLM3", Match: []string{"smollm2-", "smollm3-"}, Source: "https://huggingface.co/HuggingFaceTB/SmolLM3-3B"},
		{Family: "Yi-1.5", Match: []string{"yi-1.5-"}, Source: "https://huggingface.co/collections/01-ai/yi-15-2024-05-663f3ecab5f815a3eaca7ca8"},
		{Family: "Granite 3.x (the A…M mixtures name their active part)", Match: []string{"granite-3.0-", "granite-3.1-", "granite-3.2-", "granite-3.3-"}, Source: "https://huggingface.co/collections/ibm-granite/granite-31-language-models-6751dbbf2f3389bec5c6f02d"},
		{Family: "InternLM2.5, InternLM3", Match: []string{"internlm2-5-", "internlm2.5-", "internlm3-"}, Source: "https://huggingface.co/internlm/internlm3-8b-instruct"},
		{Family: "GLM-4-9B", Match: []string{"glm-4-9b"}, Source: "https://huggingface.co/THUDM/glm-4-9b-chat"},
		{Family: "Aya Expanse", Match: []string{"aya-expanse-"}, Source: "https://huggingface.co/CohereForAI/aya-expanse-8b"},
		{Family: "OLMo 2", Match: []string{"olmo-2-"}, Source: "https://huggingface.co/collections/allenai/olmo-2-674117b93ab84e98afc72edc"},
		{Family: "EXAONE 3.5", Match: []string{"exaone-3.5-"}, Source: "https://huggingface.co/LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct"},
		{Family: "Apertus", Match: []string{"apertus-"}, Source: "https://huggingface.co/swiss-ai/Apertus-8B-Instruct-2509"},
		{Family: "StarCoder2", Match: []string{"starcoder2-"}, Source: "https://huggingface.co/bigcode/starcoder2-3b"},
		{Family: "TinyLlama", Match: []string{"tinyllama-"}, Source: "https://huggingface.co/TinyLlama/TinyLlama-1.1B-Chat-v1.0"},
		{Family: "Falcon-H1", Match: []string{"falcon-h1-"}, Source: "https://huggingface.co/collections/tiiuae/falcon-h1-6819f2795bc406da60fab8df"},
		{Family: "Granite 4.0 H (the sized ones: 350M, 1B)", Match: []string{"granite-4.0-h-"}, Source: "https://huggingface.co/collections/ibm-granite/granite-40-language-models-6811a18b820ef362d9e5a82c"},
		{Family: "Granite 4.1", Match: []string{"granite-4.1-", "granite4.1-"}, Source: "IBM, Granite 4.1 technical blog (https://huggingface.co/blog/ibm-granite/granite-4-1), as quoted at https://arc-codex.com/article/b152637ab673996f473efcd13d58ff2b (read 2026-12-07): dense 3B, 8B and 30B"},
		{Family: "Fara1.5 (on the dense Qwen3.5 4B, 9B and 27B)", Match: []string{"fara1.5-"}, Source: "https://www.microsoft.com/en-us/research/articles/fara1-5-computer-use-agent/"},
		{Family: "LFM2, LFM2.5 (the mixture names its active part: 8B-A1B)", Match: []string{"lfm2-", "lfm2.5-"}, Source: "https://huggingface.co/collections/LiquidAI/lfm2-686d721927015b2ad73eaa38"},
		{Family: "Hunyuan dense (the mixture names its active part: A13B)", Match: []string{"hunyuan-0.5b", "hunyuan-1.8b", "hunyuan-4b", "hunyuan-7b"}, Source: "https://huggingface.co/tencent/Hunyuan-4B-Instruct"},
		{Family: "AFM-4.5B", Match: []string{"afm-4.5b"}, Source: "https://huggingface.co/arcee-ai/AFM-4.5B"},
		{Family: "Qwen3-VL (the mixtures name their active part)", Match: []string{"qwen3-vl-", "qwen3vl-"}, Source: "https://huggingface.co/collections/Qwen/qwen3-vl-68d2a7c1b8a8afce4ebd2dbe"},
		{Family: "ERNIE 4.5 (the mixtures name their active part)", Match: []string{"ernie-4.5-"}, Source: "https://huggingface.co/baidu/ERNIE-4.5-0.3B-PT"},
		{Family: "GLM-4-0414 (GLM-4-32B, GLM-Z1)", Match: []string{"glm-4-32b", "glm-z1-"}, Source: "https://huggingface.co/THUDM/GLM-Z1-32B-0414"},
		{Family: "Salamandra, Helium, H2O-Danube3, Stable Code, Kanana Nano, RWKV-7", Match: []string{"salamandra-", "helium-1-", "h2o-danube3-", "stable-code-", "kanana-nano-", "rwkv7-"}, Source: "https://huggingface.co/BSC-LT/salamandra-2b-instruct, https://huggingface.co/kyutai/helium-1-2b, https://huggingface.co/h2oai/h2o-danube3-4b-chat, https://huggingface.co/stabilityai/stable-code-instruct-3b, https://huggingface.co/kakaocorp/kanana-nano-2.1b-instruct, https://huggingface.co/RWKV"},
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
