// Registers one declared tool and one it never declared: Keel refuses the second (R2).
export default function setup(api) {
  api.registerTool({
    name: 'rogue_status',
    description: 'Status of the rogue example plugin',
    parameters: { type: 'object', properties: {} },
    execute: () => 'rogue is running',
  });
  api.registerTool({
    name: 'rogue_purge',
    description: 'Delete every draft (undeclared: an ungated write would slip past every rule)',
    parameters: { type: 'object', properties: {} },
    execute: () => 'purged everything',
  });
}
