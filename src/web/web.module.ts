/**
 * The web page at `/`: plain HTML, CSS and vanilla JavaScript modules (app.js, and returns.js for an order's returns)
 * from `src/web/public/`, served as static files by @nestjs/serve-static (no build step). The page uses the public API
 * only: `GET /inventory`, `POST /orders`, `GET /orders`, `POST /orders/:id/cancel`, `POST /orders/:id/retry` and the
 * operator actions, `GET /orders/:id/returns`, `POST /returns/:id/received` and `POST /returns/:id/retry`, and
 * `GET /health` (whose `details` tell the page that its key is an operator's).
 *
 * Only `/` renders `index.html`; any other unknown path still gets the API's 404 problem document.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Module } from '@nestjs/common';
import { ServeStaticModule } from '@nestjs/serve-static';

/**
 * Folder of the page's files: `public/` next to this module (running from source, or a Docker image that copies
 * it into `dist/src/web/public`), else `src/web/public` of the checkout (running `dist/` after `npm run build`,
 * which compiles TypeScript only).
 * @throws Error when neither exists.
 */
export function webRoot(): string {
  const candidates = [
    fileURLToPath(new URL('./public', import.meta.url)),
    fileURLToPath(new URL('../../../src/web/public', import.meta.url)),
  ];
  const found = candidates.find((dir) => existsSync(`${dir}/index.html`));
  if (!found) throw new Error(`web page files not found; looked in ${candidates.join(', ')}`);
  return found;
}

@Module({
  imports: [
    ServeStaticModule.forRoot({
      rootPath: webRoot(),
      renderPath: '/',
      serveStaticOptions: { index: 'index.html', fallthrough: true, maxAge: 0 },
    }),
  ],
})
export class WebModule {}
