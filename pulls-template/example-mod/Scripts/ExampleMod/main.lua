-- Example Mod: the script entrypoint that svc-mod.json names.
-- Its settings live in Config/ExampleMod.json; a mod manager edits them through the modConfig
-- declaration in svc-mod.json (one select, one boolean), so this script only reads them.

local damage_scale = { relaxed = 0.75, normal = 1.0, hard = 1.5 }

local ExampleMod = {}

--- The multiplier applied to incoming damage for a difficulty preset.
function ExampleMod.damage_scale(preset)
  return damage_scale[preset] or damage_scale.normal
end

--- Whether the mod shows its gameplay hints.
function ExampleMod.shows_hints(config)
  return config.ui == nil or config.ui.showHints ~= false
end

return ExampleMod
