package ingest

import (
	"slices"
	"strconv"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// launchers start a serving command; they find where the command begins
// when a page runs its comment lines and the command into one line.
func launchers() []string {
	return []string{
		"vllm serve", "python -m ", "python3 -m ", "docker run", "podman run",
		"llama-server", "sglang serve", "trtllm-serve", "lmdeploy serve",
		"text-generation-launcher", "ollama serve",
	}
}

// launched is what the Launch command section gives.
type launched struct {
	launch store.Launch
	model  string // from the command, "" when it names none
	hw     store.Hardware
}

// parseLaunch reads the Launch command section: "#" lines are notes, the
// other lines the command. The stored command keeps the notes as its
// comment lines, one a line before it, as the page shows them; the flags
// are read from the command alone. Copied as text, the whole section can be one
// line, "# note # note vllm serve …": the notes are split on " # " and the
// command starts at a known launcher.
func parseLaunch(sec *section) (launched, error) {
	var notes []string
	var cmd []string
	var comments []line
	continued := false
	for _, l := range sec.lines {
		switch {
		case strings.HasPrefix(l.text, "```"):
		case strings.HasPrefix(l.text, "#"):
			comments = append(comments, l)
		case len(cmd) > 0 && !continued:
			// Text after a finished command is most likely the next
			// section with its heading lost; it must not join the command.
			return launched{}, errorf(l.n, "unexpected text after the launch command (only \\ continues a command)")
		default:
			continued = strings.HasSuffix(l.text, "\\")
			cmd = append(cmd, strings.TrimSpace(strings.TrimSuffix(l.text, "\\")))
		}
	}
	command := strings.Join(cmd, " ")
	for i, l := range comments {
		text := strings.TrimSpace(strings.TrimLeft(l.text, "#"))
		if len(cmd) > 0 || i < len(comments)-1 {
			notes = append(notes, text)
			continue
		}
		parts := strings.Split(text, " # ")
		last := parts[len(parts)-1]
		at := findLauncher(last)
		if at < 0 && !hasFlag(last) {
			// Nothing in the last note looks like a command: the
			// command is gone, not merely run into its notes.
			return launched{}, errorf(sec.head.n, "the launch command is missing (only its # notes are there): add the command on its own line after the notes")
		}
		if at < 0 {
			return launched{}, errorf(l.n, "cannot tell the launch command from its notes: no known launcher (vllm serve, python -m …, docker run, llama-server, …)")
		}
		parts[len(parts)-1] = strings.TrimSpace(last[:at])
		command = strings.TrimSpace(last[at:])
		for _, p := range parts {
			if p = strings.TrimSpace(strings.TrimLeft(p, "#")); p != "" {
				notes = append(notes, p)
			}
		}
	}
	var out launched
	out.launch.Notes = nonEmpty(notes)
	out.launch.Command = command
	if len(out.launch.Notes) > 0 && command != "" {
		var b strings.Builder
		for _, n := range out.launch.Notes {
			b.WriteString("# " + n + "\n")
		}
		out.launch.Command = b.String() + command
	}
	toks := shellFields(command)
	out.launch.Flags = flags(toks)
	out.model = commandModel(toks, out.launch.Flags)
	setTyped(&out.launch)
	out.hw = noteHardware(notes)
	return out, nil
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// findLauncher returns where the command starts in s, including any
// "NAME=value" environment settings before the launcher, or -1.
func findLauncher(s string) int {
	at := -1
	for _, l := range launchers() {
		for off := 0; off < len(s); {
			i := strings.Index(s[off:], l)
			if i < 0 {
				break
			}
			i += off
			start := strings.LastIndexByte(s[:i], ' ') + 1 // a path such as ./build/bin/llama-server
			if start == i || s[i-1] == '/' {
				if at < 0 || start < at {
					at = start
				}
				break
			}
			off = i + 1
		}
	}
	for at > 0 {
		prev := strings.LastIndexByte(strings.TrimRight(s[:at], " "), ' ') + 1
		if !isEnvAssignment(strings.TrimSpace(s[prev:at])) {
			break
		}
		at = prev
	}
	return at
}

func isEnvAssignment(tok string) bool {
	name, _, ok := strings.Cut(tok, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || i > 0 && isDigit(c)) {
			return false
		}
	}
	return true
}

// shellFields splits a command into words the way a shell would for the
// quoting found in launch commands.
func shellFields(s string) []string {
	var out []string
	var b strings.Builder
	in := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// hasFlag reports whether s has a word such as "--max-model-len", which
// commands have and notes do not.
func hasFlag(s string) bool {
	return slices.ContainsFunc(strings.Fields(s), isFlag)
}

func isFlag(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(tok, 64)
	return err != nil // "-1" is a value
}

// flags reads "--key value", "--key=value" and bare "--flag" (= "true"),
// keyed without the dashes; a repeated flag keeps its last value.
func flags(toks []string) map[string]string {
	fs := map[string]string{}
	for i := 0; i < len(toks); i++ {
		if !isFlag(toks[i]) {
			continue
		}
		key := strings.TrimLeft(toks[i], "-")
		if k, v, ok := strings.Cut(key, "="); ok {
			if k != "" {
				fs[k] = v
			}
			continue
		}
		if key == "" {
			continue
		}
		if i+1 < len(toks) && !isFlag(toks[i+1]) {
			fs[key] = toks[i+1]
			i++
			continue
		}
		fs[key] = "true"
	}
	if len(fs) == 0 {
		return nil
	}
	return fs
}

// commandModel finds the served model: the argument of "vllm serve" and
// the like, else a --model flag.
func commandModel(toks []string, fs map[string]string) string {
	for i, t := range toks {
		var next int
		switch {
		case (t == "vllm" || t == "sglang") && i+1 < len(toks) && toks[i+1] == "serve":
			next = i + 2
		case t == "trtllm-serve":
			next = i + 1
		default:
			continue
		}
		if next < len(toks) && !isFlag(toks[next]) {
			return toks[next]
		}
	}
	for _, k := range []string{"model", "model-path"} {
		if v := fs[k]; v != "" && v != "true" {
			return v
		}
	}
	return ""
}

// setTyped copies the flags the store keeps as fields. A value that is not
// a plain number stays only in Flags.
func setTyped(l *store.Launch) {
	fs := l.Flags
	if n, ok := plainInt(fs["max-model-len"]); ok {
		l.MaxModelLen = &n
	}
	if n, ok := plainInt(fs["max-num-seqs"]); ok {
		l.MaxNumSeqs = &n
	}
	if f, ok := plainFloat(fs["gpu-memory-utilization"]); ok {
		l.GPUMemoryUtilization = &f
	}
	l.KVCacheDtype = fs["kv-cache-dtype"]
	l.AttentionBackend = fs["attention-backend"]
	if _, ok := fs["enable-prefix-caching"]; ok {
		v := fs["enable-prefix-caching"] != "false"
		l.EnablePrefixCaching = &v
	}
	if _, ok := fs["no-enable-prefix-caching"]; ok {
		v := false
		l.EnablePrefixCaching = &v
	}
}

func plainInt(s string) (int, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func plainFloat(s string) (float64, bool) {
	if s == "" || strings.Trim(s, "0123456789.") != "" || strings.Count(s, ".") > 1 || s == "." {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// noteHardware picks what the notes say about the machine, as in
// "1x RTX 3060 12GB, stock 170 W limit, PCIe Gen3 x16 | … | NVIDIA driver
// 580.178.04". The first note that says a thing wins.
func noteHardware(notes []string) store.Hardware {
	var hw store.Hardware
	for _, n := range notes {
		if hw.GPUCount == nil {
			k := 0
			for k < len(n) && isDigit(n[k]) {
				k++
			}
			if k > 0 && (strings.HasPrefix(n[k:], "x ") || strings.HasPrefix(n[k:], "× ")) {
				if c, err := strconv.Atoi(n[:k]); err == nil {
					hw.GPUCount = &c
				}
			}
		}
		if hw.PowerLimitW == nil {
			if i := strings.Index(n, " W limit"); i > 0 {
				j := strings.LastIndexByte(n[:i], ' ') + 1
				if w, ok := plainFloat(n[j:i]); ok {
					hw.PowerLimitW = &w
				}
			}
		}
		if hw.PCIe == "" {
			if i := strings.Index(n, "PCIe "); i >= 0 {
				ws := strings.Fields(n[i+len("PCIe "):])
				if len(ws) > 0 && strings.HasPrefix(ws[0], "Gen") {
					hw.PCIe = strings.TrimRight(ws[0], ",;|)")
					if len(ws) > 1 && strings.HasPrefix(ws[1], "x") && !strings.ContainsAny(ws[0], ",;|)") {
						hw.PCIe += " " + strings.TrimRight(ws[1], ",;|)")
					}
				}
			}
		}
		if hw.DriverVersion == "" {
			i := strings.Index(n, "driver ")
			if i < 0 {
				i = strings.Index(n, "Driver ")
			}
			if i >= 0 {
				ws := strings.Fields(n[i+len("driver "):])
				if len(ws) > 0 && isDigit(ws[0][0]) {
					hw.DriverVersion = strings.TrimRight(ws[0], ",;|)")
				}
			}
		}
	}
	return hw
}
