import { html } from '@codemirror/lang-html';
import { basicSetup, EditorView } from 'codemirror';
import { useEffect, useRef } from 'react';

/**
 * CodeMirror 6 with HTML highlighting, completion and folding. The editable area is a textbox
 * named by the visible label (`labelId`); Tab is left to move focus (CodeMirror's default, not
 * indentWithTab), so keyboard users are never trapped in it. `value` seeds it; edits go out by onChange.
 */
export function HtmlEditor({ value, onChange, labelId, invalid }: { value: string; onChange: (value: string) => void; labelId: string; invalid?: boolean }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        basicSetup,
        html(),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'aria-labelledby': labelId, ...(invalid ? { 'aria-invalid': 'true' } : {}) }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) changed.current(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    return () => editor.destroy();
    // Created once; a new template remounts the editor (key), so `value` is read only here.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return <div ref={host} className={invalid ? 'code-editor invalid' : 'code-editor'} />;
}
