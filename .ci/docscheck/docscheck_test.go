//go:build docscheck

// Package docscheck checks that the commands the documents show still work,
// so that README.md and BENCHMARKS.md cannot drift from the code. It reads
// every fenced sh/bash/shell block of the documents, splits each line into
// commands (&&, ;, |, a subshell's parentheses; a `cd` moves the commands
// after it), and checks each go command without running anything long:
//
//   - go test: `go test -n` with the documented flags (the flags parse, the
//     packages exist, -fuzz names one package), `go vet` of the packages
//     (they and their tests compile), and every -run, -bench and -fuzz
//     pattern matches a test function of those packages (-run only when it
//     selects tests: beside -bench or -fuzz it is the "run no tests" idiom);
//   - go run: the target builds, and every flag the command passes to it
//     appears in the built program's -h output;
//   - go build, go vet: go vet of the same arguments;
//   - bash FILE: the file exists.
//
// A go run of a remote tool (a path with @version) is listed as skipped: it
// needs the network. Other commands (curl, shell loops, the built test
// binary) are not checked.
//
//	go test -tags docscheck -count=1 ./.ci/docscheck
//
// .ci/run runs it; it takes about 20 seconds on 2 cores once the build cache
// holds the packages (CI's vet and test steps have filled it before).
package docscheck

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// documents are the files whose commands are checked, relative to the
// repository root.
var documents = []string{"README.md", "BENCHMARKS.md"}

// command is one command of a document: its words, the directory it runs
// in (relative to the repository root) and the environment assignments
// before it.
type command struct {
	file string
	line int
	dir  string
	env  []string
	args []string
}

func (c command) String() string {
	s := strings.Join(c.args, " ")
	if c.dir != "." {
		s = "(in " + c.dir + ") " + s
	}
	return fmt.Sprintf("%s:%d: %s", c.file, c.line, s)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return root
}

// TestDocumentCommands checks every go command of the documents.
func TestDocumentCommands(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	built := map[string]string{} // dir+target -> binary
	for _, doc := range documents {
		cmds, err := extract(root, doc)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cmds {
			if len(c.args) >= 2 && c.args[0] == "go" {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no go command found in its sh blocks (is the extractor broken?)", doc)
		}
		for _, c := range cmds {
			c := c
			t.Run(fmt.Sprintf("%s:%d:%s", c.file, c.line, strings.Join(c.args, "_")), func(t *testing.T) {
				check(t, root, bin, built, c)
			})
		}
	}
}

// TestREADMEStartsWithTheTwoCommands: the README opens with the server and
// the test command, and the test command is the one .ci/run runs.
func TestREADMEStartsWithTheTwoCommands(t *testing.T) {
	root := repoRoot(t)
	cmds, err := extract(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 2 {
		t.Fatalf("README.md: fewer than two commands")
	}
	first := []string{"go run ./cmd/actord", "go test -race ./..."}
	for i, want := range first {
		if got := strings.Join(cmds[i].args, " "); got != want {
			t.Errorf("README.md's command %d is %q, want %q", i+1, got, want)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^go test -race \./\.\.\.$`).Match(ci) {
		t.Errorf(".ci/run does not run the README's test command %q on a line of its own", first[1])
	}
}

// extract returns the commands of the sh, bash and shell blocks of doc.
func extract(root, doc string) ([]command, error) {
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cmds []command
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inBlock, shell := false, false
	dir := "."
	pending, pendingLine := "", 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !inBlock {
				lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
				inBlock, shell, dir = true, lang == "sh" || lang == "bash" || lang == "shell", "."
			} else {
				inBlock = false
			}
			continue
		}
		if !inBlock || !shell {
			continue
		}
		if pending == "" {
			pendingLine = n
		}
		if strings.HasSuffix(trimmed, `\`) {
			pending += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		var lineCmds []command
		lineCmds, dir = parseLine(doc, pendingLine, dir, full)
		cmds = append(cmds, lineCmds...)
	}
	return cmds, sc.Err()
}

// parseLine splits one shell line into commands. A cd changes the
// directory of the commands after it, to the end of the block, or to the
// end of the line if the line is a subshell (it starts with a parenthesis).
func parseLine(doc string, line int, dir, s string) ([]command, string) {
	words, seps := tokenize(s)
	subshell := strings.HasPrefix(strings.TrimSpace(s), "(")
	cur := dir
	var cmds []command
	var group []string
	flush := func() {
		if len(group) == 0 {
			return
		}
		g := group
		group = nil
		var env []string
		for len(g) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(g[0]) {
			env = append(env, g[0])
			g = g[1:]
		}
		if len(g) == 0 {
			return
		}
		if g[0] == "cd" && len(g) == 2 {
			cur = filepath.Clean(filepath.Join(cur, g[1]))
			return
		}
		cmds = append(cmds, command{file: doc, line: line, dir: cur, env: env, args: g})
	}
	for i, w := range words {
		if seps[i] {
			flush()
			continue
		}
		group = append(group, w)
	}
	flush()
	if subshell {
		return cmds, dir
	}
	return cmds, cur
}

// tokenize splits s into words and separators (&&, ||, ;, |, parentheses,
// marked true in seps), dropping comments and redirections and keeping
// quoted text as one word without its quotes.
func tokenize(s string) (words []string, seps []bool) {
	var b strings.Builder
	inWord := false
	var quote byte
	word := func() {
		if inWord {
			w := b.String()
			b.Reset()
			inWord = false
			// a redirection: drop it and its target (the next word, when it
			// stands alone)
			if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "<") {
				if w == ">" || w == "2>" || w == "<" || w == ">>" {
					words = append(words, "\x00redir")
					seps = append(seps, false)
				}
				return
			}
			if len(words) > 0 && words[len(words)-1] == "\x00redir" {
				words, seps = words[:len(words)-1], seps[:len(seps)-1]
				return
			}
			words = append(words, w)
			seps = append(seps, false)
		}
	}
	sep := func() {
		word()
		words = append(words, "")
		seps = append(seps, true)
	}
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
			quote, inWord = c, true
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			// a command substitution stays inside its word
			depth := 0
			for ; i < len(s); i++ {
				b.WriteByte(s[i])
				if s[i] == '(' {
					depth++
				} else if s[i] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			inWord = true
		case c == '#' && !inWord:
			word()
			return words, seps
		case c == ' ' || c == '\t':
			word()
		case c == ';' || c == '(' || c == ')':
			sep()
		case c == '&' || c == '|':
			if c == '&' && b.Len() > 0 && strings.HasSuffix(b.String(), ">") { // 2>&1
				b.WriteByte(c)
				continue
			}
			if i+1 < len(s) && s[i+1] == c {
				i++
			}
			sep()
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	word()
	return words, seps
}

// testValueFlags are the go test and build flags that take a value (a word
// after them unless written -flag=value).
var testValueFlags = map[string]bool{
	"run": true, "bench": true, "benchtime": true, "count": true, "cpu": true, "timeout": true,
	"fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "parallel": true, "list": true,
	"skip": true, "o": true, "tags": true, "p": true, "coverprofile": true, "cpuprofile": true,
	"memprofile": true, "blockprofile": true, "mutexprofile": true, "trace": true, "outputdir": true,
	"covermode": true, "coverpkg": true, "exec": true, "ldflags": true, "gcflags": true, "mod": true,
	"vet": true, "C": true, "asmflags": true, "buildmode": true, "overlay": true, "pgo": true,
	"pkgdir": true, "toolexec": true, "shuffle": true, "memprofilerate": true,
}

// splitGoArgs separates the flags (with their values) from the package or
// file arguments that follow the go subcommand, up to -args.
func splitGoArgs(args []string) (flags map[string]string, flagArgs, pkgs, rest []string) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" {
			return flags, flagArgs, pkgs, args[i+1:]
		}
		if !strings.HasPrefix(a, "-") {
			pkgs = append(pkgs, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		name = strings.TrimPrefix(name, "test.")
		value := ""
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value = k, v
			flagArgs = append(flagArgs, a)
		} else if testValueFlags[name] && i+1 < len(args) {
			i++
			value = args[i]
			flagArgs = append(flagArgs, a, value)
		} else {
			flagArgs = append(flagArgs, a)
		}
		flags[name] = value
	}
	return flags, flagArgs, pkgs, nil
}

func check(t *testing.T, root, bin string, built map[string]string, c command) {
	dir := filepath.Join(root, c.dir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%v: directory %s does not exist", c, c.dir)
	}
	args := c.args
	switch {
	case args[0] == "bash" && len(args) >= 2:
		if _, err := os.Stat(filepath.Join(dir, args[1])); err != nil {
			t.Errorf("%v: %v", c, err)
		}
		return
	case args[0] != "go" || len(args) < 2:
		t.Skipf("not a go command: %v", c)
	}
	switch args[1] {
	case "test":
		checkTest(t, dir, c)
	case "run":
		checkRun(t, dir, bin, built, c)
	case "build", "vet":
		flags, _, pkgs, _ := splitGoArgs(args[2:])
		vet := []string{"vet"}
		if tags, ok := flags["tags"]; ok {
			vet = append(vet, "-tags", tags)
		}
		goCmd(t, dir, c, append(vet, pkgs...)...)
	default:
		t.Skipf("go %s is not checked: %v", args[1], c)
	}
}

func checkTest(t *testing.T, dir string, c command) {
	flags, _, pkgs, _ := splitGoArgs(c.args[2:])
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	// The flags parse and the packages exist (-n prints what would run).
	goCmd(t, dir, c, append([]string{"test", "-n"}, c.args[2:]...)...)
	// The packages and their tests compile.
	vet := []string{"vet"}
	if tags, ok := flags["tags"]; ok {
		vet = append(vet, "-tags", tags)
	}
	goCmd(t, dir, c, append(vet, pkgs...)...)
	// Every pattern selects something.
	_, selectsOther := flags["bench"]
	if _, ok := flags["fuzz"]; ok {
		selectsOther = true
	}
	var patterns [][2]string // kind, pattern
	for _, k := range []string{"bench", "fuzz"} {
		if p, ok := flags[k]; ok && p != "" && p != "." {
			patterns = append(patterns, [2]string{k, p})
		}
	}
	if p, ok := flags["run"]; ok && !selectsOther && p != "" {
		patterns = append(patterns, [2]string{"run", p})
	}
	if len(patterns) == 0 {
		return
	}
	names := testFuncs(t, dir, c, flags["tags"], pkgs)
	for _, kp := range patterns {
		prefix := map[string][]string{"bench": {"Benchmark"}, "fuzz": {"Fuzz"}, "run": {"Test", "Example", "Fuzz"}}[kp[0]]
		// Go matches each slash-separated element against one level of
		// (sub)tests; the first names the top-level function.
		top := strings.SplitN(kp[1], "/", 2)[0]
		re, err := regexp.Compile(top)
		if err != nil {
			t.Errorf("%v: -%s %q: %v", c, kp[0], kp[1], err)
			continue
		}
		found := false
		for _, n := range names {
			for _, p := range prefix {
				if strings.HasPrefix(n, p) && re.MatchString(n) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%v: -%s %q matches no %s function in %v", c, kp[0], kp[1], strings.Join(prefix, "/"), pkgs)
		}
	}
}

// testFuncs returns the names of the top-level Test, Benchmark, Fuzz and
// Example functions of pkgs' test files.
func testFuncs(t *testing.T, dir string, c command, tags string, pkgs []string) []string {
	args := []string{"list"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-f", `{{$d := .Dir}}{{range .TestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .XTestGoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}`)
	out := goCmd(t, dir, c, append(args, pkgs...)...)
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	var names []string
	for _, f := range strings.Fields(out) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fn.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	return names
}

var flagWord = regexp.MustCompile(`^--?([A-Za-z][\w.-]*)`)

func checkRun(t *testing.T, dir, bin string, built map[string]string, c command) {
	flags, _, rest, _ := splitGoArgs(c.args[2:])
	if len(rest) == 0 {
		t.Fatalf("%v: go run without a target", c)
	}
	// splitGoArgs read the program's own flags as packages: the target is
	// the first word that is not a go flag, the rest are the program's.
	target := rest[0]
	progArgs := c.args[2:]
	for i, a := range progArgs {
		if a == target {
			progArgs = progArgs[i+1:]
			break
		}
	}
	if strings.Contains(target, "@") {
		t.Skipf("%v: a remote tool (needs the network)", c)
	}
	key := dir + "|" + target
	exe, ok := built[key]
	if !ok {
		exe = filepath.Join(bin, fmt.Sprintf("prog%d", len(built)))
		build := []string{"build", "-o", exe}
		if tags, ok := flags["tags"]; ok {
			build = append(build, "-tags", tags)
		}
		goCmd(t, dir, c, append(build, target)...)
		built[key] = exe
	}
	var want []string
	for _, a := range progArgs {
		if m := flagWord.FindStringSubmatch(a); m != nil {
			want = append(want, m[1])
		}
	}
	if len(want) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-h")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // -h exits 0 or 2 by the program's choice
	if ctx.Err() != nil {
		t.Fatalf("%v: %s -h did not return in 20 s", c, target)
	}
	for _, f := range want {
		if !regexp.MustCompile(`(?m)^\s+--?` + regexp.QuoteMeta(f) + `\b`).Match(out) {
			t.Errorf("%v: %s has no flag -%s (its -h output:\n%s)", c, target, f, out)
		}
	}
}

// goCmd runs go with args in dir and returns its standard output; it fails
// the test (naming the document's command) if go fails.
func goCmd(t *testing.T, dir string, c command, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), c.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n  go %s: %v\n%s", c, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
