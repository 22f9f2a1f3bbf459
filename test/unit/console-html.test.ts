/** The console's templates escape every interpolation (src/console/html.ts): only their own fragments pass as markup. */
import { describe, expect, it } from 'vitest';
import { escapeHtml, html } from '../../src/console/html.js';

describe('console html templates', () => {
  it('escapes text in element content and in attributes', () => {
    const hostile = `<script>alert('x')</script>" onmouseover="alert(1)` + '`';
    const out = html`<p title="${hostile}">${hostile}</p>`.text;
    expect(out).toBe(
      '<p title="&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot; onmouseover=&quot;alert(1)&#96;">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot; onmouseover=&quot;alert(1)&#96;</p>',
    );
    expect(escapeHtml('a & b')).toBe('a &amp; b');
  });

  it('inserts its own fragments and arrays of them as markup, and renders nothing for null, undefined and false', () => {
    const items = ['<a>', 'b'].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.text).toBe('<ul><li>&lt;a&gt;</li><li>b</li></ul>0');
  });

  it('does not take a look-alike object as markup', () => {
    const fake = { text: '<img src=x onerror=alert(1)>' } as unknown as string;
    expect(html`${fake}`.text).toBe('[object Object]');
  });
});
