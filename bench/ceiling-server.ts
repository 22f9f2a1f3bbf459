/** The ceiling: a bare Fastify route that parses the same JSON body and answers 200. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/hooks', async (req) => ({ status: 'received', id: String((req.body as { id?: string }).id ?? '') }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.send?.('ready');
