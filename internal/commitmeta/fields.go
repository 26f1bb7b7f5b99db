package commitmeta

// The field grammar, shared by Decode and by Encode's check of extra:
//
//	fields = field *( " " field )
//	field  = key "=" value
//	key    = 1*( "a"-"z" )
//	value  = *( 0x21-0x7E )   ; printable, no space

// field is one key=value. at and valueAt are byte offsets in the string
// scanned, for error messages.
type field struct {
	key, value  string
	at, valueAt int
}

// fieldScanner walks a space-separated field list in s starting at i. Every
// field is required to be well formed: there is no empty list, and a space is
// always followed by another field (so no leading, trailing or double space).
//
// A fieldScanner is not safe for concurrent use; it lives on one stack.
type fieldScanner struct {
	s    string
	i    int  // offset of the next field; meaningful while !done
	done bool // the last field ended at len(s)
}

// next returns the next field, ok false after the last, or the first syntax
// error. After an error the scanner must not be used.
func (sc *fieldScanner) next() (f field, ok bool, err *SyntaxError) {
	if sc.done {
		return field{}, false, nil
	}
	s, i := sc.s, sc.i
	f.at = i
	for i < len(s) && s[i] >= 'a' && s[i] <= 'z' {
		i++
	}
	if i == f.at {
		return field{}, false, syntaxError(s, i, "a field key [a-z]", nil)
	}
	if i == len(s) || s[i] != '=' {
		return field{}, false, syntaxError(s, i, "'=' or a key letter [a-z]", nil)
	}
	f.key = s[f.at:i]
	i++
	f.valueAt = i
	for i < len(s) && s[i] > ' ' && s[i] <= '~' {
		i++
	}
	f.value = s[f.valueAt:i]
	switch {
	case i == len(s):
		sc.done = true
	case s[i] == ' ':
		sc.i = i + 1
	default:
		return field{}, false, syntaxError(s, i, "a printable value byte, ' ' or end of input", nil)
	}
	return f, true, nil
}
