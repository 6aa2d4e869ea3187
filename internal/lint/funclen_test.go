package lint

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxBodyLines is the longest a function body may be: the lines strictly
// between its braces. A function may be longer when its doc comment
// contains longBecause and says why.
const (
	maxBodyLines = 80
	longBecause  = "long because"
)

// pending are functions over the limit in code another change owns right
// now; each is to be split (or to say why it is long), and then leaves
// this list. An entry whose function is no longer too long fails the test,
// so the list only shrinks.
var pending = map[string]bool{}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// longFunc is a function over the limit.
type longFunc struct {
	key   string // file (relative to the module root) and name
	lines int
	why   bool // its doc comment says why it is long
}

// productionFiles lists the module's .go files that go into binaries:
// not tests, not testdata, not other modules nested inside, not generated.
func productionFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// funcName is the function as go doc names it: Name, or (*T).Name and
// T.Name for methods.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if idx, ok := typ.(*ast.IndexExpr); ok { // a generic receiver T[P]
		typ = idx.X
	} else if idx, ok := typ.(*ast.IndexListExpr); ok {
		typ = idx.X
	}
	switch r := typ.(type) {
	case *ast.StarExpr:
		x := r.X
		if idx, ok := x.(*ast.IndexExpr); ok {
			x = idx.X
		} else if idx, ok := x.(*ast.IndexListExpr); ok {
			x = idx.X
		}
		return fmt.Sprintf("(*%s).%s", x, fd.Name.Name)
	default:
		return fmt.Sprintf("%s.%s", r, fd.Name.Name)
	}
}

// longFuncs parses every production file under root and returns the
// functions whose body is over maxBodyLines, and how many files it read.
func longFuncs(root string) ([]longFunc, int, error) {
	files, err := productionFiles(root)
	if err != nil {
		return nil, 0, err
	}
	fset := token.NewFileSet()
	var out []longFunc
	var errs []error
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ast.IsGenerated(f) {
			continue
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil, 0, err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
			if lines <= maxBodyLines {
				continue
			}
			why := fd.Doc != nil && strings.Contains(strings.ToLower(fd.Doc.Text()), longBecause)
			out = append(out, longFunc{key: filepath.ToSlash(rel) + ":" + funcName(fd), lines: lines, why: why})
		}
	}
	if len(errs) > 0 {
		return nil, 0, fmt.Errorf("production files that do not parse:\n%w", errors.Join(errs...))
	}
	return out, len(files), nil
}

func TestNoProductionFunctionIsLongerThanItsLimitWithoutSayingWhy(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	long, files, err := longFuncs(root)
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("found %d production files under %s; the walk is broken", files, root)
	}
	seen := map[string]bool{}
	for _, f := range long {
		seen[f.key] = true
		if f.why || pending[f.key] {
			continue
		}
		t.Errorf("%s: body of %d lines, over %d: extract well-named functions, or say in its doc comment why it is %s …",
			f.key, f.lines, maxBodyLines, longBecause)
	}
	var stale []string
	for key := range pending {
		if !seen[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	for _, key := range stale {
		t.Errorf("%s is no longer over %d lines (or is gone): take it off the pending list", key, maxBodyLines)
	}
}

// TestTheCheckSeesWhatItShould pins the check on a module of its own: the
// lines strictly between the braces, methods named as go doc names them, a
// doc comment that says why it is long noted, and tests, testdata, nested
// modules and generated files left alone.
func TestTheCheckSeesWhatItShould(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n) }
	src := "package p\n\ntype T struct{}\n\n" +
		"func atTheLimit() {\n" + body(maxBodyLines) + "}\n\n" +
		"func overTheLimit() {\n" + body(maxBodyLines+1) + "}\n\n" +
		"// explained is long because it is one table.\nfunc explained() {\n" + body(maxBodyLines+1) + "}\n\n" +
		"func (*T) method() {\n" + body(maxBodyLines+5) + "}\n\n" +
		"func (T) value() {\n" + body(maxBodyLines+2) + "}\n"
	for name, content := range map[string]string{
		"go.mod":        "module example.test/p\n",
		"p.go":          src,
		"p_test.go":     "package p\n\nfunc longTest() {\n" + body(maxBodyLines+1) + "}\n",
		"testdata/x.go": "package x\n\nfunc inTestdata() {\n" + body(maxBodyLines+1) + "}\n",
		"nested/go.mod": "module example.test/nested\n",
		"nested/n.go":   "package n\n\nfunc inAnotherModule() {\n" + body(maxBodyLines+1) + "}\n",
		"gen/gen.go":    "// Code generated by hand. DO NOT EDIT.\n\npackage gen\n\nfunc generated() {\n" + body(maxBodyLines+1) + "}\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long, files, err := longFuncs(root)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 {
		t.Errorf("read %d production files, want 2 (p.go and gen/gen.go: not tests, testdata or another module)", files)
	}
	got := map[string]longFunc{}
	for _, f := range long {
		got[f.key] = f
	}
	want := map[string]longFunc{
		"p.go:overTheLimit": {lines: maxBodyLines + 1},
		"p.go:explained":    {lines: maxBodyLines + 1, why: true},
		"p.go:(*T).method":  {lines: maxBodyLines + 5},
		"p.go:T.value":      {lines: maxBodyLines + 2},
	}
	if len(got) != len(want) {
		t.Errorf("long functions %+v, want exactly %v (none at the limit, none generated)", long, want)
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok || g.lines != w.lines || g.why != w.why {
			t.Errorf("%s: %+v (found %v), want %d lines, why %v", key, g, ok, w.lines, w.why)
		}
	}
}
