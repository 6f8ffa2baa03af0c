package calculator

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/matrixd/matrixd/msg"
)

// GPUSpec is one GPU of the hardware catalog: what scaling speed and
// capacity to it needs, and where the figures come from.
type GPUSpec struct {
	Name         string   `json:"name"`
	Aliases      []string `json:"aliases"`
	Vendor       string   `json:"vendor"`
	Architecture string   `json:"architecture"`
	// Generation decides whether measured speed carries over to another
	// GPU: kernels and KV-read efficiency are shared within one.
	Generation   string   `json:"generation"`
	Segment      string   `json:"segment"`
	VRAMGB       float64  `json:"vram_gb"`
	BandwidthGBs float64  `json:"memory_bandwidth_gbs"`
	FP16TFLOPS   *float64 `json:"fp16_tflops"`
	TDPW         *float64 `json:"tdp_w"`
	// SystemMaxPowerW is the vendor's maximum wall power of the whole
	// system the GPU ships in (an Apple Mac, a DGX Spark), for a GPU whose
	// vendor publishes no TDP of its own: an upper bound, never a GPU TDP.
	// Its page and the date it was read are required with it.
	SystemMaxPowerW      *float64 `json:"system_max_power_w"`
	SystemMaxPowerSource string   `json:"system_max_power_source"`
	SystemMaxPowerRead   string   `json:"system_max_power_read"`
	Source               string   `json:"source"`
	Note                 string   `json:"note"`
	// card is what the sizes of one card share: vendor and name without
	// its VRAM size (set by ParseCatalog).
	card string
}

// hardwareJSON is the catalog: GPUs with their vendors' data-sheet figures.
//
//go:embed hardware.json
var hardwareJSON []byte

// Catalog is the hardware catalog, read-only once built.
type Catalog struct {
	gpus  []GPUSpec
	index map[string]int   // gpuKey of every name and alias → gpus index
	sizes map[string][]int // GPUSpec.card → the gpus indexes of that card's sizes
}

// hardware parses the embedded catalog once; it is checked by the tests,
// so a broken file never ships.
var hardware = sync.OnceValue(func() *Catalog {
	c, err := ParseCatalog(hardwareJSON)
	if err != nil {
		panic("calculator: embedded hardware catalog: " + err.Error())
	}
	return c
})

// Hardware returns the embedded hardware catalog.
func Hardware() *Catalog { return hardware() }

// ParseCatalog reads a catalog and checks it: every GPU named, with a
// vendor, generation, VRAM, bandwidth and source, and no name or alias
// that resolves to two GPUs.
func ParseCatalog(data []byte) (*Catalog, error) {
	var doc struct {
		GPUs []GPUSpec `json:"gpus"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	c := &Catalog{index: map[string]int{}, sizes: map[string][]int{}}
	for i, g := range doc.GPUs {
		switch {
		case g.Name == "" || g.Vendor == "" || g.Generation == "" || g.Source == "":
			return nil, fmt.Errorf("GPU %d (%q): name, vendor, generation and source are required", i, g.Name)
		case !(g.VRAMGB > 0) || !(g.BandwidthGBs > 0):
			return nil, fmt.Errorf("GPU %q: vram_gb and memory_bandwidth_gbs must be positive", g.Name)
		case g.FP16TFLOPS != nil && !(*g.FP16TFLOPS > 0), g.TDPW != nil && !(*g.TDPW > 0), g.SystemMaxPowerW != nil && !(*g.SystemMaxPowerW > 0):
			return nil, fmt.Errorf("GPU %q: fp16_tflops, tdp_w and system_max_power_w are positive or null", g.Name)
		}
		if err := checkSystemPower(g); err != nil {
			return nil, fmt.Errorf("GPU %q: %w", g.Name, err)
		}
		for _, name := range append([]string{g.Name}, g.Aliases...) {
			k := gpuKey(name)
			if k == "" {
				return nil, fmt.Errorf("GPU %q: name %q has no letters or digits", g.Name, name)
			}
			if j, dup := c.index[k]; dup && j != i {
				return nil, fmt.Errorf("%q names both %q and %q", name, doc.GPUs[j].Name, g.Name)
			}
			c.index[k] = i
		}
		g.card = g.Vendor + "\x00" + sizeFree(g.Name)
		c.sizes[g.card] = append(c.sizes[g.card], i)
		c.gpus = append(c.gpus, g)
	}
	return c, nil
}

// checkSystemPower holds a system power figure to its provenance: the
// vendor page (https) it was read from and the date it was read, which
// come with the figure and never without it.
func checkSystemPower(g GPUSpec) error {
	if g.SystemMaxPowerW == nil {
		if g.SystemMaxPowerSource != "" || g.SystemMaxPowerRead != "" {
			return errors.New("system_max_power_source and system_max_power_read come only with system_max_power_w")
		}
		return nil
	}
	if !isHTTPS(g.SystemMaxPowerSource) {
		return errors.New("system_max_power_w needs system_max_power_source, the https page it was read from")
	}
	if _, err := time.Parse(time.DateOnly, g.SystemMaxPowerRead); err != nil {
		return errors.New("system_max_power_w needs system_max_power_read, the date (YYYY-MM-DD) it was read")
	}
	return nil
}

// isHTTPS reports whether s is an absolute https URL with a host.
func isHTTPS(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// gpuKey is what a GPU name is matched by: its letters and digits, lower
// case, without vendor and brand words.
func gpuKey(s string) string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	fields = slices.DeleteFunc(fields, func(w string) bool {
		switch w {
		case "nvidia", "geforce", "amd", "apple", "radeon", "instinct":
			return true
		}
		return false
	})
	return strings.Join(fields, "")
}

// GPUs returns the catalog's GPUs in the catalog's order.
func (c *Catalog) GPUs() []GPUSpec { return slices.Clone(c.gpus) }

// Lookup finds a GPU by its name or an alias, ignoring case, spacing,
// punctuation and vendor words ("3090", "RTX 3090", "NVIDIA GeForce RTX
// 3090" are one GPU).
func (c *Catalog) Lookup(name string) (GPUSpec, bool) {
	i, ok := c.index[gpuKey(name)]
	if !ok {
		return GPUSpec{}, false
	}
	return c.gpus[i], true
}

// Suggest lists up to n catalog names close to name, for a message about a
// name that did not resolve: those that contain its key (or that it
// contains), else those holding its longest prefix ("RTX 3095" → RTX 3090,
// RTX 3090 Ti; "3099" → the same).
func (c *Catalog) Suggest(name string, n int) []string {
	k := gpuKey(name)
	match := func(f func(g string) bool) []string {
		var out []string
		for _, g := range c.gpus {
			if f(gpuKey(g.Name)) {
				out = append(out, g.Name)
				if len(out) == n {
					break
				}
			}
		}
		return out
	}
	if k == "" {
		return nil
	}
	if out := match(func(g string) bool { return strings.Contains(g, k) || strings.Contains(k, g) }); len(out) > 0 {
		return out
	}
	for p := len(k) - 1; p >= 3; p-- {
		if out := match(func(g string) bool { return strings.Contains(g, k[:p]) }); len(out) > 0 {
			return out
		}
	}
	return nil
}

// LookupSized finds the GPU a run names, of the VRAM size it states: a
// name that resolves to one size of a card sold in several ("RTX 4060 Ti"
// is the 8 GB card, "A100" the 80 GB SXM) is the same card's entry whose
// VRAM is closest to vramGB (a run on "RTX 4060 Ti" with 16 GB is the
// 16 GB card, one on "A100" with 40 GB the 40 GB SXM). vramGB 0 is
// Lookup.
func (c *Catalog) LookupSized(name string, vramGB float64) (GPUSpec, bool) {
	g, ok := c.Lookup(name)
	if !ok || !(vramGB > 0) || g.VRAMGB == vramGB {
		return g, ok
	}
	best := g
	for _, i := range c.sizes[g.card] {
		if o := c.gpus[i]; math.Abs(o.VRAMGB-vramGB) < math.Abs(best.VRAMGB-vramGB) {
			best = o
		}
	}
	return best, true
}

// Sized reports whether the catalog has g's card in more than one VRAM
// size.
func (c *Catalog) Sized(g GPUSpec) bool { return len(c.sizes[g.card]) > 1 }

// sizeRe is a VRAM size written in a GPU's name ("16GB", "80 GB").
var sizeRe = regexp.MustCompile(`(?i)\b\d+(?:\.\d+)?\s*GB\b`)

// sizeFree is a GPU name's key without its VRAM size: one card's sizes
// share it.
func sizeFree(name string) string { return gpuKey(sizeRe.ReplaceAllString(name, " ")) }

// sameAs reports whether g is the GPU run r was measured on (of the VRAM
// size it states).
func (g GPUSpec) sameAs(r Run) bool {
	from, ok := LookupRunGPU(r.GPU, r.VRAMGB)
	return ok && from.Name == g.Name
}

// SameCard reports whether two catalog GPUs are one card in different VRAM
// sizes (or the same entry).
func SameCard(a, b GPUSpec) bool {
	return a.Name == b.Name || a.card != "" && a.card == b.card
}

// NamesSize reports whether a GPU name says its VRAM size ("RTX 4060 Ti
// 16GB", not "RTX 4060 Ti").
func NamesSize(name string) bool { return sizeRe.MatchString(name) }

// LookupGPU finds a GPU of the embedded catalog by name or alias.
func LookupGPU(name string) (GPUSpec, bool) { return Hardware().Lookup(name) }

// LookupRunGPU finds the GPU of the embedded catalog a run names, of the
// VRAM size it states (Catalog.LookupSized).
func LookupRunGPU(name string, vramGB float64) (GPUSpec, bool) {
	return Hardware().LookupSized(name, vramGB)
}

// unknownGPU is the refusal for a GPU the catalog does not have.
func unknownGPU(name, code string) error {
	supported := msg.New("calculator.supported_catalog_gpu")
	if s := Hardware().Suggest(name, 6); len(s) > 0 {
		supported = msg.New("calculator.supported_catalog_gpu_suggest", strings.Join(s, ", "))
	}
	return refuse(supported, code, clipName(name))
}

func clipName(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}
