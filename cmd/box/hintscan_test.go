package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// hintsNamingVerbs are the hints outside cmd/box that still name a box verb, by file,
// function and verb: what #18 has yet to move into hints.go. The list only shrinks: a
// hint that names a verb and is not listed fails, and so does a listed one that is gone.
var hintsNamingVerbs = []string{

	"backend/bwrap/audit.go (*BaselineError).Hint: box version", // prose: "an older box version"
}

// TestBackendHintsNameNoVerb: a hint that names one of box's verbs is the CLI's to word
// (hints.go, from a typed error); the packages box calls say what went wrong. It reads
// every non-test Go file outside cmd/ for hints: the hint given to errs.WithHint,
// errs.Usage or a package's usage helper (a local variable's strings too), and what a
// Hint method returns.
func TestBackendHintsNameNoVerb(t *testing.T) {
	var names []string
	for _, c := range newRoot(newEnv(nil, nil, nil)).Commands() {
		names = append(names, regexp.QuoteMeta(c.Name()))
	}
	verb := regexp.MustCompile(`\bbox (` + strings.Join(names, "|") + `)\b`)
	root, _ := filepath.Abs("../..")
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || rel == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			for _, s := range hintStrings(fn) {
				for _, m := range verb.FindAllString(s, -1) {
					found = append(found, rel+" "+funcName(fn)+": "+m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	found = slices.Compact(found)
	for _, h := range found {
		if !slices.Contains(hintsNamingVerbs, h) {
			t.Errorf("%s: a hint outside cmd/box names a box verb; return a typed error and word the hint in cmd/box/hints.go", h)
		}
	}
	for _, h := range hintsNamingVerbs {
		if !slices.Contains(found, h) {
			t.Errorf("%s: moved or gone; take it off hintsNamingVerbs", h)
		}
	}
}

// hintStrings are the string constants of fn's hints: its whole body for a Hint method,
// else the hint argument of each hint-making call, with the strings assigned to a
// variable named there.
func hintStrings(fn *ast.FuncDecl) []string {
	var exprs []ast.Node
	if fn.Recv != nil && fn.Name.Name == "Hint" {
		exprs = append(exprs, fn.Body)
	}
	assigned := map[string][]ast.Expr{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && len(n.Rhs) == len(n.Lhs) {
					assigned[id.Name] = append(assigned[id.Name], n.Rhs[i])
				}
			}
		case *ast.CallExpr:
			name := ""
			switch f := n.Fun.(type) {
			case *ast.SelectorExpr:
				name = f.Sel.Name
			case *ast.Ident:
				name = f.Name
			}
			switch {
			case name == "WithHint" && len(n.Args) == 2:
				exprs = append(exprs, n.Args[1])
			case (name == "Usage" || name == "usage") && len(n.Args) > 1:
				exprs = append(exprs, n.Args[0])
			}
		}
		return true
	})
	var out []string
	seen := map[string]bool{}
	var walk func(ast.Node)
	walk = func(e ast.Node) {
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
					out = append(out, s)
				}
			case *ast.Ident:
				if !seen[n.Name] {
					seen[n.Name] = true
					for _, r := range assigned[n.Name] {
						walk(r)
					}
				}
			}
			return true
		})
	}
	for _, e := range exprs {
		walk(e)
	}
	return out
}

// funcName is fn's name as the list says it: (Recv).Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		t, star = s.X, "*"
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
