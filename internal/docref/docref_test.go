package docref

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// roots are the trees whose comments are checked, from the module root.
var roots = []string{"internal", "plugin"}

// TestDocReferences checks every comment under internal/ and plugin/ that
// names a Go file: the file exists, and each name the comment ties to it
// is declared there (see the package doc for the forms read). A failure
// names the comment's file:line, the reference and what is wrong.
func TestDocReferences(t *testing.T) {
	root := moduleRoot(t)
	pkgs := map[string]*pkgDecls{} // by directory, from the module root
	load := func(dir string) *pkgDecls {
		if p, ok := pkgs[dir]; ok {
			return p
		}
		p := parseDir(t, root, dir)
		pkgs[dir] = p
		return p
	}
	var dirs []string
	for _, r := range roots {
		err := filepath.WalkDir(filepath.Join(root, r), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || d.Name() == "docref" { // docref's comments are examples
					return filepath.SkipDir
				}
				rel, _ := filepath.Rel(root, path)
				dirs = append(dirs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	refs := 0
	for _, dir := range dirs {
		p := load(dir)
		for _, f := range p.files {
			for _, cg := range f.ast.Comments {
				for _, r := range references(cg, p.fset) {
					refs++
					if msg := check(root, dir, p, load, r); msg != "" {
						t.Errorf("%s:%d: %q: %s", f.path, r.line, r.text, msg)
					}
				}
			}
		}
	}
	if refs < 100 {
		t.Errorf("found %d file references, want at least 100: has the reader stopped finding them?", refs)
	}
}

// ref is one reference in a comment: files, and the names tied to them
// (none when only the file is named).
type ref struct {
	line  int    // of the first file named
	text  string // the reference as written, for the message
	files []string
	names []string
}

// pkgDecls is what one directory's Go files declare, test files included.
type pkgDecls struct {
	fset  *token.FileSet
	files []*parsedFile
	// fieldTypes maps each struct field name in the directory to the
	// named types it has (a field's type after *, [] and map values).
	fieldTypes map[string][]string
}

type parsedFile struct {
	name  string // base name
	path  string // from the module root
	ast   *ast.File
	decls map[string]bool // names and Type.Member names declared in it
	// topLevel is what decls holds but fields and interface methods:
	// functions, methods, types, variables and constants.
	topLevel map[string]bool
}

func (p *pkgDecls) file(name string) *parsedFile {
	for _, f := range p.files {
		if f.name == name {
			return f
		}
	}
	return nil
}

// declaredIn returns the files of p that declare name.
func (p *pkgDecls) declaredIn(name string) []string {
	var in []string
	for _, f := range p.files {
		if f.decls[name] {
			in = append(in, f.name)
		}
	}
	return in
}

// names reports whether word is a name p's code gives something: a
// declaration outside its tests other than a field, or a field whose type
// p declares ("partition", an int32, is prose; "replay", a replayPart, is
// a name).
func (p *pkgDecls) names(word string) bool {
	for _, f := range p.files {
		if strings.HasSuffix(f.name, "_test.go") {
			continue
		}
		if f.topLevel[word] {
			return true
		}
		for _, typ := range p.fieldTypes[word] {
			if p.declaresType(typ) {
				return true
			}
		}
	}
	return false
}

func (p *pkgDecls) declaresType(name string) bool {
	for _, f := range p.files {
		if f.topLevel[name] {
			return true
		}
	}
	return false
}

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
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func parseDir(t *testing.T, root, dir string) *pkgDecls {
	t.Helper()
	p := &pkgDecls{fset: token.NewFileSet(), fieldTypes: map[string][]string{}}
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return p // a directory that does not exist declares nothing
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := dir + "/" + e.Name()
		af, err := parser.ParseFile(p.fset, filepath.Join(root, path), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		f := &parsedFile{name: e.Name(), path: path, ast: af, decls: map[string]bool{}, topLevel: map[string]bool{}}
		p.files = append(p.files, f)
		collect(f, p.fieldTypes)
	}
	return p
}

// collect records what f declares, and the types of its struct fields.
func collect(f *parsedFile, fieldTypes map[string][]string) {
	add := func(names ...string) {
		for _, n := range names {
			f.decls[n] = true
		}
	}
	var members func(owner string, x ast.Expr)
	members = func(owner string, x ast.Expr) {
		switch x := x.(type) {
		case *ast.StructType:
			for _, fld := range x.Fields.List {
				typ := typeName(fld.Type)
				for _, n := range fld.Names {
					add(n.Name, owner+"."+n.Name)
					if typ != "" && !strings.HasSuffix(f.name, "_test.go") {
						fieldTypes[n.Name] = append(fieldTypes[n.Name], typ)
					}
				}
				if len(fld.Names) == 0 && typ != "" { // embedded
					add(typ, owner+"."+typ)
				}
				members(owner, fld.Type)
			}
		case *ast.InterfaceType:
			for _, m := range x.Methods.List {
				for _, n := range m.Names {
					add(n.Name, owner+"."+n.Name)
				}
			}
		case *ast.StarExpr:
			members(owner, x.X)
		case *ast.ArrayType:
			members(owner, x.Elt)
		case *ast.MapType:
			members(owner, x.Value)
		}
	}
	for _, d := range f.ast.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Name.Name)
			f.topLevel[d.Name.Name] = true
			if d.Recv != nil && len(d.Recv.List) == 1 {
				add(typeName(d.Recv.List[0].Type) + "." + d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Name.Name)
					f.topLevel[s.Name.Name] = true
					members(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						add(n.Name)
						f.topLevel[n.Name] = true
					}
					if s.Type != nil {
						members(s.Names[0].Name, s.Type)
					}
				}
			}
		}
	}
}

// typeName is the named type at the bottom of x: T for *T, []T, map[K]T,
// T[P] and pkg.T (as "pkg.T"); "" for others.
func typeName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.ArrayType:
		return typeName(x.Elt)
	case *ast.MapType:
		return typeName(x.Value)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok {
			return pkg.Name + "." + x.Sel.Name
		}
	}
	return ""
}

var (
	fileRE  = regexp.MustCompile(`\b((?:[a-z0-9_]+/)*[a-z0-9_]+\.go)\b`)
	lineRE  = regexp.MustCompile(`^:\s*\d`)    // a line number after a file: another project's source
	citeRE  = regexp.MustCompile(`\.go:\s*\d`) // the same inside a parenthesis
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
	partRE  = regexp.MustCompile(`[,;]| and `)
	hashRE  = regexp.MustCompile(`\bat [0-9a-f]{7,40}\b`) // "at 23d44c0": the tree of a past commit
	// inRE is "Name in file.go" and "Name, in file.go", the name group 1.
	inRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.]*),? in $`)
	// possRE is "file.go's Name", the name group 1, after the file.
	possRE = regexp.MustCompile(`^'s ([A-Za-z_][A-Za-z0-9_.]*)`)
)

// references returns the references to Go files in cg, read as the package
// doc says.
func references(cg *ast.CommentGroup, fset *token.FileSet) []ref {
	// One string for the group, each comment line's text after // joined by
	// a space, with the line each byte came from.
	var text strings.Builder
	var lines []int // the line of text's byte i
	for _, c := range cg.List {
		body, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			body = strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
		}
		line := fset.Position(c.Slash).Line
		for i, l := range strings.Split(body, "\n") {
			if text.Len() > 0 {
				text.WriteByte(' ')
				lines = append(lines, line+i)
			}
			text.WriteString(strings.TrimSpace(l))
			for range len(strings.TrimSpace(l)) {
				lines = append(lines, line+i)
			}
		}
	}
	s := text.String()
	var refs []ref
	seenParen := map[int]bool{} // parentheses already read, by their start
	for _, m := range fileRE.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2], m[3]
		if lineRE.MatchString(s[end:]) {
			continue
		}
		if hashRE.MatchString(s[:start]) {
			continue // the file as it was at a commit the comment names
		}
		open, close := enclosing(s, start)
		if open < 0 {
			r := ref{line: lines[start], text: s[start:end], files: []string{s[start:end]}}
			if mm := inRE.FindStringSubmatch(s[:start]); mm != nil {
				r.text = mm[0] + r.text
				r.names = []string{strings.TrimSuffix(mm[1], ".")}
			}
			if mm := possRE.FindStringSubmatch(s[end:]); mm != nil {
				r.text += mm[0]
				r.names = []string{strings.TrimSuffix(mm[1], ".")}
			}
			refs = append(refs, r)
			continue
		}
		if seenParen[open] {
			continue
		}
		seenParen[open] = true
		inner := s[open+1 : close]
		if citeRE.MatchString(inner) || strings.Contains(inner, "kgo") || strings.Contains(inner, "Benthos") {
			continue // another project's source
		}
		r := ref{line: lines[start], text: s[open : close+1]}
		// The parenthesis's parts, between commas, semicolons and "and":
		// files, names standing alone, and prose.
		prose := false
		for _, part := range partRE.Split(inner, -1) {
			part = strings.TrimSpace(part)
			for _, w := range strings.Fields(part) {
				if f, ok := goFile(w); ok {
					r.files = append(r.files, f)
				}
			}
			switch {
			case part == "":
			case fileRE.MatchString(part) && len(strings.Fields(part)) == 1:
			case identRE.MatchString(part):
				r.names = append(r.names, part)
			default:
				if mm := inRE.FindStringSubmatch(part[:max(0, strings.LastIndex(part, " ")+1)]); mm != nil && len(strings.Fields(part)) == 3 {
					r.names = append(r.names, mm[1]) // "Name in file.go"
				} else {
					prose = true
				}
			}
		}
		if !prose && len(r.names) == 0 {
			// Only files: the name is the word before the parenthesis,
			// unless an article or a preposition makes it prose.
			before := strings.Fields(s[:open])
			if n := len(before); n > 0 {
				w := strings.TrimRight(before[n-1], ",;:")
				if identRE.MatchString(w) && (n < 2 || !determiner(before[n-2])) {
					r.text = w + " " + r.text
					r.names = []string{w}
				}
			}
		}
		refs = append(refs, r)
	}
	return refs
}

// enclosing returns the parenthesis around s[i], or -1, -1.
func enclosing(s string, i int) (int, int) {
	open := -1
	for j := i - 1; j >= 0; j-- {
		if s[j] == ')' {
			return -1, -1
		}
		if s[j] == '(' {
			open = j
			break
		}
	}
	if open < 0 {
		return -1, -1
	}
	close := strings.IndexAny(s[i:], "()")
	if close < 0 || s[i+close] == '(' {
		return -1, -1
	}
	return open, i + close
}

// codeLike reports whether w reads as code rather than prose: camelCase
// or Type.Member. (snake_case is a config field's name, not Go's.)
func codeLike(w string) bool {
	if a, b, ok := strings.Cut(w, "."); ok {
		return a != "" && b != ""
	}
	for i, r := range w {
		if i > 0 && unicode.IsUpper(r) && unicode.IsLower(rune(w[i-1])) {
			return true
		}
	}
	return false
}

// determiner reports whether w, before a word, makes that word prose: "the
// drain (drain.go)", "this epoch (gauges.go)", "the key order's part".
func determiner(w string) bool {
	switch strings.ToLower(w) {
	case "a", "an", "the", "this", "that", "its", "their", "each", "every", "one", "of", "for", "in", "on", "to", "by", "with", "from", "run", "own", "as", "is", "not":
		return true
	}
	return strings.HasSuffix(w, "'s")
}

// goFile returns w's Go file, without the punctuation around it.
func goFile(w string) (string, bool) {
	w = strings.TrimSuffix(strings.TrimRight(w, ".,;:)"), "'s")
	return w, fileRE.FindString(w) == w && strings.HasSuffix(w, ".go")
}

// check returns what is wrong with r, a reference in a comment of dir, or "".
func check(root, dir string, p *pkgDecls, load func(string) *pkgDecls, r ref) string {
	type target struct {
		pkg  *pkgDecls
		file *parsedFile
	}
	var targets []target
	for _, f := range r.files {
		fdir, base := dir, f
		if strings.Contains(f, "/") {
			fdir, base = pathDir(f), filepath.Base(f)
		}
		if _, err := os.Stat(filepath.Join(root, fdir, base)); err != nil {
			return fmt.Sprintf("%s does not exist in %s/", base, fdir)
		}
		tp := load(fdir)
		targets = append(targets, target{tp, tp.file(base)})
	}
	var problems []string
	for _, n := range r.names {
		// A word is a name when it looks like code or its package
		// declares it; otherwise it is prose.
		tp := targets[0].pkg
		if !codeLike(n) && !tp.names(n) {
			continue
		}
		if found(n, targets[0].pkg, func(yield func(*parsedFile) bool) {
			for _, t := range targets {
				if !yield(t.file) {
					return
				}
			}
		}) {
			continue
		}
		files := strings.Join(r.files, " or ")
		if in := tp.declaredIn(n); len(in) > 0 {
			problems = append(problems, fmt.Sprintf("%s is declared in %s, not %s", n, strings.Join(in, ", "), files))
		} else {
			problems = append(problems, fmt.Sprintf("%s declares no %s", files, n))
		}
	}
	return strings.Join(problems, "; ")
}

// found reports whether one of files declares n, or n is a field of p
// whose type one of them declares.
func found(n string, p *pkgDecls, files func(func(*parsedFile) bool)) bool {
	for f := range files {
		if f.decls[n] {
			return true
		}
		if _, member, ok := strings.Cut(n, "."); ok && f.decls[member] {
			return true // pkg.Name or value.Member
		}
		for _, typ := range p.fieldTypes[n] {
			if f.decls[typ] {
				return true
			}
		}
	}
	return false
}

func pathDir(f string) string {
	return filepath.ToSlash(filepath.Dir(f))
}
