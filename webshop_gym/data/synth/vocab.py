"""Hand-written vocabulary for the synthetic shop generator.

Everything here was written for webshop_gym; nothing is copied from the reference WebShop data.
The tables mirror the *kinds* of content a scraped shop has (product types with breadcrumbs,
per-type attribute pools, option groups, brands, sentence templates) so that generated shops look
and behave like a real one.

Conventions:

* Attributes are short lowercase phrases of two or three words.  An attribute may start with a
  role marker, ``"for "`` or ``"with "``, which is not part of the attribute: it tells the
  instruction writer to say "... for sensitive skin" instead of "sensitive skin ...".
* Option pools hold the option's display name (capitalised, as on a product page) and its values
  (in natural case; the loader lowercases them).
* Every tuple is ordered; the generator never iterates over sets or relies on ``hash()``.
"""

from __future__ import annotations

from dataclasses import dataclass

# The tables below keep one entry per line; formatters should leave them alone.
# fmt: off
BREADCRUMB_SEP = " \u203a "

CATEGORIES: tuple[str, ...] = ("beauty", "electronics", "fashion", "grocery", "garden")

# --------------------------------------------------------------------------------------------
# Option pools: key -> (display name, values)
# --------------------------------------------------------------------------------------------
OPTION_POOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    # colours
    "color_apparel": ("Color", (
        "Black", "White", "Navy", "Heather Gray", "Charcoal", "Burgundy", "Olive", "Khaki",
        "Dusty Pink", "Sky Blue", "Ivory", "Mustard", "Forest Green", "Lavender", "Coral", "Camel",
        "Teal", "Rust", "Black/White", "Navy/Red", "Plum", "Sand", "Denim Blue", "Wine",
    )),
    "color_shoe": ("Color", (
        "Black", "White", "Gray", "Navy", "Black/White", "Triple Black", "Taupe", "Tan", "Brown",
        "Pink", "Olive", "Cream", "Red", "Royal Blue", "Silver", "Beige", "Chestnut", "Teal",
    )),
    "color_home": ("Color", (
        "Beige", "Cream", "Light Gray", "Charcoal", "Navy", "Sage", "Terracotta", "Mustard",
        "Blush", "White", "Black", "Teal", "Rust", "Ivory", "Taupe", "Olive", "Lilac", "Walnut",
        "Slate", "Coral", "Mint", "Espresso", "Gray/White", "Emerald",
    )),
    "color_wood": ("Color", (
        "Walnut", "Espresso", "Natural Oak", "White", "Black", "Gray Wash", "Rustic Brown", "Cherry",
        "Driftwood", "Honey Pine", "Chestnut", "Ash", "Mahogany",
    )),
    "color_device": ("Color", (
        "Black", "White", "Silver", "Space Gray", "Rose Gold", "Blue", "Red", "Green", "Purple",
        "Midnight", "Pink", "Graphite", "Teal", "Yellow", "Orange", "Gold", "Lavender",
    )),
    "color_kitchen": ("Color", (
        "Black", "Stainless Steel", "Red", "Sage", "Cream", "Navy", "Copper", "Gray", "White",
        "Matte Black", "Teal", "Turquoise", "Charcoal", "Olive", "Blush",
    )),
    "color_shade": ("Color", (
        "Porcelain", "Fair Ivory", "Light Beige", "Warm Sand", "Honey", "Golden Tan", "Caramel",
        "Chestnut", "Espresso", "Mocha", "Deep Cocoa", "Natural", "Buff", "Almond", "Toffee",
    )),
    "color_lip": ("Color", (
        "Ruby", "Berry", "Nude Rose", "Coral", "Plum", "Mauve", "Brick", "Cherry", "Peach",
        "Wine", "Pink", "Fuchsia", "Bronze", "Caramel", "Magenta",
    )),
    "color_metal": ("Color", (
        "Silver", "Gold", "Rose Gold", "Black", "Bronze", "Copper", "Pewter", "Gunmetal",
        "Champagne", "Platinum",
    )),
    "color_garden": ("Color", (
        "Green", "Black", "Terracotta", "Gray", "White", "Brown", "Blue", "Beige", "Charcoal",
        "Red", "Sand", "Tan", "Navy", "Olive",
    )),
    # sizes
    "size_apparel": ("Size", (
        "X-Small", "Small", "Medium", "Large", "X-Large", "XX-Large", "3X-Large",
    )),
    "size_shoe_women": ("Size", (
        "5", "5.5", "6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "11",
    )),
    "size_shoe_men": ("Size", (
        "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "11.5", "12", "13",
    )),
    "size_kids": ("Size", ("2T", "3T", "4T", "5 Years", "6 Years", "7 Years", "8 Years", "10 Years", "12 Years")),
    "size_baby": ("Size", ("Newborn", "0-3 Months", "3-6 Months", "6-9 Months", "9-12 Months", "12-18 Months")),
    "size_onesize": ("Size", ("One Size", "Small/Medium", "Large/X-Large")),
    "size_ring": ("Size", ("5", "6", "7", "8", "9", "10")),
    "size_volume": ("Size", (
        "1 Fl Oz", "1.7 Fl Oz", "2 Fl Oz", "3.4 Fl Oz", "4 Fl Oz", "6.7 Fl Oz", "8 Fl Oz",
        "12 Fl Oz", "16.9 Fl Oz",
    )),
    "size_weight_food": ("Size", (
        "2 Ounce (Pack of 6)", "4 Ounce", "5.5 Ounce (Pack of 4)", "8 Ounce", "12 Ounce",
        "16 Ounce (Pack of 2)", "1.5 Pound", "2 Pound", "5 Pound Bag",
    )),
    "size_drink": ("Size", (
        "8.4 Fl Oz (Pack of 12)", "12 Fl Oz (Pack of 24)", "16.9 Fl Oz (Pack of 6)", "1 Liter",
        "20 Count", "40 Count", "100 Count",
    )),
    "size_pillow": ("Size", (
        "12 x 20 Inch", "16 x 16 Inch", "18 x 18 Inch", "20 x 20 Inch", "22 x 22 Inch",
        "24 x 24 Inch", "26 x 26 Inch",
    )),
    "size_bed": ("Size", ("Twin", "Twin XL", "Full", "Queen", "King", "California King")),
    "size_rug": ("Size", (
        "2 x 3 Feet", "3 x 5 Feet", "4 x 6 Feet", "5 x 7 Feet", "6 x 9 Feet", "8 x 10 Feet",
        "2.5 x 8 Feet Runner",
    )),
    "size_curtain": ("Size", (
        "42 x 45 Inch", "42 x 63 Inch", "42 x 84 Inch", "52 x 84 Inch", "52 x 95 Inch",
        "52 x 108 Inch",
    )),
    "size_wall": ("Size", (
        "8 x 10 Inch", "11 x 14 Inch", "12 x 16 Inch", "16 x 20 Inch", "18 x 24 Inch",
        "24 x 36 Inch",
    )),
    "size_drinkware": ("Size", ("10 Oz", "12 Oz", "16 Oz", "20 Oz", "24 Oz", "32 Oz", "40 Oz")),
    "size_cookware": ("Size", ("8 Inch", "10 Inch", "12 Inch", "3 Piece Set", "5 Piece Set", "10 Piece Set")),
    "size_storage": ("Size", ("Small", "Medium", "Large", "Extra Large", "Set of 3", "Set of 6")),
    "size_hose": ("Size", ("25 Feet", "50 Feet", "75 Feet", "100 Feet")),
    "size_cable": ("Size", ("1 Foot", "3 Feet", "6 Feet", "10 Feet", "15 Feet", "25 Feet")),
    "size_screen": ("Size", ("6.1 Inch", "6.3 Inch", "6.7 Inch", "6.9 Inch")),
    "size_tablet": ("Size", ("8 Inch", "10.2 Inch", "11 Inch", "12.9 Inch")),
    "size_laptop": ("Size", ("11-12 Inch", "13-13.3 Inch", "14 Inch", "15-15.6 Inch", "16 Inch", "17 Inch")),
    "size_band": ("Size", ("38mm", "40mm", "41mm", "42mm", "44mm", "45mm", "49mm")),
    "size_tv": ("Size", ("32 Inch", "43 Inch", "50 Inch", "55 Inch", "65 Inch", "75 Inch")),
    "size_tool": ("Size", ("Small", "Standard", "Large", "Compact", "Heavy Duty")),
    # capacities, counts
    "capacity_memory": ("Capacity", ("32GB", "64GB", "128GB", "256GB", "512GB", "1TB")),
    "capacity_battery": ("Capacity", ("5000mAh", "10000mAh", "20000mAh", "26800mAh")),
    "count": ("Count", ("1 Count", "2 Count", "3 Count", "4 Count", "6 Count", "10 Count", "12 Count", "24 Count", "50 Count")),
    "pack": ("Item Package Quantity", ("1", "2", "3", "4", "6", "8", "12")),
    "number_items": ("Number of Items", ("1", "2", "3", "4", "5", "6")),
    "set_size": ("Size", ("Set of 2", "Set of 4", "Set of 6", "Set of 8", "Set of 12")),
    "wattage": ("Wattage", ("600W", "1000W", "1200W", "1500W", "1875W")),
    # flavours, scents
    "flavor_savory": ("Flavor Name", (
        "Sea Salt", "Barbecue", "Sour Cream & Onion", "Jalapeno", "Honey Mustard", "Salt & Vinegar",
        "Cheddar", "Original", "Chili Lime", "Dill Pickle", "Smoked Paprika", "Garlic Herb",
        "Teriyaki", "Black Pepper",
    )),
    "flavor_sweet": ("Flavor Name", (
        "Chocolate Chip", "Peanut Butter", "Vanilla", "Strawberry", "Salted Caramel",
        "Mint Chocolate", "Cookies & Cream", "Coconut", "Blueberry", "Cinnamon", "Birthday Cake",
        "Lemon", "Maple Pecan", "Raspberry", "Toffee Crunch", "Banana",
    )),
    "flavor_drink": ("Flavor Name", (
        "Original", "Vanilla", "Hazelnut", "Dark Roast", "Mocha", "Peach", "Mango",
        "Mixed Berry", "Lemon Ginger", "Peppermint", "Chai", "Decaf", "Pineapple", "Watermelon",
        "Lime", "Cherry", "Hibiscus", "Orange",
    )),
    "flavor_pantry": ("Flavor Name", (
        "Original", "Roasted Garlic", "Spicy", "Mild", "Smoky Chipotle", "Honey", "Basil",
        "Unsalted", "Lightly Salted", "Tomato Basil", "Sweet Chili", "Lemon Pepper", "Habanero",
    )),
    "flavor_oral": ("Flavor Name", (
        "Mint", "Spearmint", "Cinnamon", "Wintergreen", "Bubblegum", "Charcoal Mint", "Unflavored",
        "Peppermint", "Clean Citrus",
    )),
    "color_eye": ("Color", ("Black", "Brown", "Dark Brown", "Navy", "Plum", "Bronze", "Emerald", "Gray")),
    "scent": ("Scent", (
        "Lavender", "Unscented", "Eucalyptus", "Vanilla", "Coconut", "Citrus", "Rose",
        "Sandalwood", "Ocean Breeze", "Cucumber", "Cedarwood", "Fresh Linen", "Jasmine", "Peppermint",
        "Amber", "Grapefruit",
    )),
    # styles, patterns, materials
    "style_phone_case": ("Style", ("Clear", "Slim", "Rugged", "Wallet", "Kickstand", "Magnetic", "Glitter")),
    "style_headphone": ("Style", ("Standard", "Sport", "Pro", "Lite", "Kids Edition")),
    "style_furniture": ("Style", ("Modern", "Farmhouse", "Industrial", "Mid Century", "Coastal", "Scandinavian", "Traditional")),
    "style_jewelry": ("Style", ("Classic", "Minimalist", "Vintage", "Layered", "Charm", "Personalized")),
    "style_lamp": ("Style", ("Drum Shade", "Globe", "Arc", "Tripod", "Mushroom", "Lantern")),
    "style_kitchen": ("Style", ("Classic", "Pro", "Essential", "Deluxe", "Compact")),
    "style_bag": ("Style", ("Tote", "Crossbody", "Shoulder", "Satchel", "Hobo", "Clutch")),
    "style_hair_tool": ("Style", ("1 Inch", "1.25 Inch", "1.5 Inch", "Mini", "Wide Plate")),
    "style_keyboard": ("Style", ("Full Size", "Tenkeyless", "Compact 60%", "Split")),
    "style_grooming": ("Style", ("Starter Kit", "Refill", "Travel", "Deluxe Set")),
    "pattern": ("Pattern Name", (
        "Solid", "Floral", "Geometric", "Stripe", "Plaid", "Polka Dot", "Leaf Print", "Boho",
        "Abstract", "Herringbone", "Paisley", "Checkered",
    )),
    "material_jewelry": ("Material", ("Sterling Silver", "Gold Plated", "Stainless Steel", "Titanium", "Brass")),
    "material_furniture": ("Material Type", ("Solid Wood", "Engineered Wood", "Metal", "Bamboo", "Rattan")),
    "fit_type": ("Fit Type", ("Regular", "Big & Tall", "Plus Size", "Petite")),
    "connectivity": ("Style", ("Wired", "Wireless", "Bluetooth", "USB-C")),
    "shape": ("Item Shape", ("Round", "Square", "Rectangle", "Oval", "Hexagon")),
}

# --------------------------------------------------------------------------------------------
# Product groups and types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """A family of related product types that share attributes, options and wording.

    Attributes:
        category: One of CATEGORIES.
        root: Breadcrumb prefix (joined with BREADCRUMB_SEP), e.g. "Beauty & Personal Care › Skin Care".
        attributes: Attribute pool (see module docstring for the role markers).
        options: Option schema: (pool key, probability the product has it, min values, max values).
        adjectives: Title words.
        materials: Materials / ingredients / components mentioned in texts.
        uses: Use cases ("everyday wear", "travel").
        specs: Short spec phrases for titles ("2 Pack", "16 Oz").
        users: Who it is for.
    """

    category: str
    root: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, float, int, int], ...]
    adjectives: tuple[str, ...]
    materials: tuple[str, ...]
    uses: tuple[str, ...]
    specs: tuple[str, ...]
    users: tuple[str, ...] = ("everyone",)


@dataclass(frozen=True)
class ProductType:
    """One product type: its search query (lowercase), breadcrumb tail, price range in dollars.

    Attributes:
        query: The lowercase query phrase (what the product "was scraped with").
        group: Key into GROUPS.
        tail: Breadcrumb tail appended to the group's root.
        price_lo: Typical lowest price in dollars.
        price_hi: Typical highest price in dollars.
        plural: Whether the query is a plural noun phrase.
        nouns: Alternative title noun phrases (the query's title case is always one of them).
        extra_attributes: Type-specific attributes added to the group pool.
    """

    query: str
    group: str
    tail: str
    price_lo: float
    price_hi: float
    plural: bool = True
    nouns: tuple[str, ...] = ()
    extra_attributes: tuple[str, ...] = ()


G = Group
GROUPS: dict[str, Group] = {
    # ---------------------------------------------------------------- beauty
    "skin_care": G(
        "beauty", "Beauty & Personal Care › Skin Care",
        ("for dry skin", "for sensitive skin", "for oily skin", "fragrance free", "cruelty free",
         "with hyaluronic acid", "with vitamin c", "paraben free", "non comedogenic", "anti aging",
         "natural ingredients", "dermatologist tested", "quick absorbing", "travel size",
         "with shea butter", "with aloe vera", "reef safe", "vegan formula", "fine lines"),
        (("size_volume", 0.6, 2, 5), ("scent", 0.3, 2, 5), ("count", 0.15, 2, 4)),
        ("Gentle", "Hydrating", "Daily", "Soothing", "Brightening", "Nourishing", "Lightweight", "Rich"),
        ("glycerin", "squalane", "jojoba oil", "green tea extract", "niacinamide", "ceramides", "oat extract"),
        ("morning routines", "night routines", "travel", "post-shower care", "everyday use"),
        ("1.7 Fl Oz", "2 Pack", "3.4 Oz", "8 Oz Bottle", "Value Size", "Travel Set"),
        ("women", "men", "teens", "all skin types"),
    ),
    "hair_care": G(
        "beauty", "Beauty & Personal Care › Hair Care",
        ("sulfate free", "color safe", "for curly hair", "for damaged hair", "hair growth",
         "for dry scalp", "frizz control", "heat protection", "silicone free", "for thin hair",
         "deep conditioning", "salon quality", "with argan oil", "with tea tree", "cruelty free",
         "paraben free", "natural ingredients", "volume boost"),
        (("size_volume", 0.6, 2, 5), ("scent", 0.35, 2, 5), ("pack", 0.15, 2, 4)),
        ("Moisturizing", "Strengthening", "Clarifying", "Smoothing", "Repairing", "Volumizing", "Salon"),
        ("keratin", "biotin", "rosemary oil", "coconut oil", "rice water", "panthenol", "castor oil"),
        ("wash days", "daily styling", "color-treated hair", "weekly treatments", "the shower"),
        ("12 Fl Oz", "2 Pack", "Salon Size", "16.9 Oz", "Travel Size", "Duo Set"),
        ("women", "men", "kids", "all hair types"),
    ),
    "makeup": G(
        "beauty", "Beauty & Personal Care › Makeup",
        ("long lasting", "cruelty free", "full coverage", "matte finish", "high pigment",
         "easy blend", "smudge proof", "vegan formula", "light weight", "water resistant",
         "natural look", "paraben free", "travel size", "dewy finish", "sensitive eyes",
         "easy apply", "buildable formula"),
        (("color_shade", 0.55, 3, 8), ("color_lip", 0.3, 3, 8), ("count", 0.15, 2, 3)),
        ("Velvet", "Flawless", "Soft Focus", "Long Wear", "Pro", "Silky", "Radiant", "Ultra"),
        ("mineral pigments", "vitamin e", "jojoba esters", "rice powder", "beeswax", "mica"),
        ("everyday looks", "evening makeup", "weddings", "touch-ups on the go", "photo shoots"),
        ("0.5 Oz", "2 Count", "12 Shades", "Mini Size", "Full Size", "3 Piece"),
        ("women", "teens", "makeup artists", "beginners"),
    ),
    "fragrance_bath": G(
        "beauty", "Beauty & Personal Care › Fragrance & Bath",
        ("long lasting", "essential oils", "natural ingredients", "cruelty free", "gift set",
         "travel size", "aluminum free", "for sensitive skin", "vegan formula", "paraben free",
         "fresh scent", "moisturizing formula", "handmade soap", "gift wrapping", "coconut milk"),
        (("scent", 0.75, 2, 6), ("size_volume", 0.35, 2, 4), ("count", 0.2, 2, 4)),
        ("Luxury", "Relaxing", "Refreshing", "Calming", "Spa", "Signature", "Classic", "Botanical"),
        ("shea butter", "epsom salt", "oat milk", "olive oil", "goat milk", "essential oils"),
        ("bath time", "self care nights", "gifting", "the gym bag", "daily showers"),
        ("Gift Set", "6 Pack", "3.4 Fl Oz", "12 Count", "Travel Kit", "Bath Set"),
        ("women", "men", "moms", "couples"),
    ),
    "oral_care": G(
        "beauty", "Beauty & Personal Care › Oral Care",
        ("oral hygiene", "sensitive teeth", "fresh breath", "fluoride free", "gum care",
         "rechargeable battery", "travel case", "soft bristles", "teeth whitening", "mint flavor",
         "enamel safe", "dentist recommended", "long battery", "easy grip", "bpa free"),
        (("color_device", 0.45, 2, 5), ("count", 0.35, 2, 4), ("flavor_drink", 0.1, 2, 3)),
        ("Sonic", "Gentle", "Deep Clean", "Whitening", "Fresh", "Advanced", "Daily"),
        ("activated charcoal", "baking soda", "xylitol", "peppermint oil", "nylon bristles"),
        ("morning brushing", "travel", "braces care", "kids brushing time", "daily routines"),
        ("2 Pack", "4 Count", "Travel Kit", "Value Pack", "Family Pack", "Refill Heads"),
        ("adults", "kids", "families", "teens"),
    ),
    "hair_tools": G(
        "beauty", "Beauty & Personal Care › Hair Care › Styling Tools",
        ("ceramic plates", "fast heating", "dual voltage", "auto shut off", "ionic technology",
         "adjustable temperature", "travel size", "cool shot", "heat resistant", "long cord",
         "frizz control", "salon quality", "light weight", "easy grip", "storage pouch"),
        (("color_device", 0.45, 2, 4), ("style_hair_tool", 0.35, 2, 4)),
        ("Professional", "Ionic", "Compact", "Salon", "Titanium", "Ceramic", "Cordless"),
        ("tourmaline", "titanium", "ceramic", "boar bristles", "silicone"),
        ("daily styling", "travel", "salon blowouts", "quick touch-ups", "special events"),
        ("1 Inch", "1875W", "Travel Size", "Pro Kit", "With Case", "2 in 1"),
        ("women", "men", "stylists", "teens"),
    ),
    "grooming": G(
        "beauty", "Beauty & Personal Care › Shave & Hair Removal",
        ("beard growth", "natural ingredients", "with argan oil", "close shave", "sensitive skin friendly",
         "travel size", "cordless use", "rechargeable battery", "waterproof body", "gift set",
         "stainless blades", "fragrance free", "sandalwood scent", "easy clean", "long battery"),
        (("scent", 0.35, 2, 4), ("style_grooming", 0.35, 2, 4), ("color_device", 0.2, 2, 3)),
        ("Classic", "Precision", "Rugged", "Gentleman's", "Smooth", "Barber", "Premium"),
        ("jojoba oil", "beeswax", "stainless steel", "menthol", "vitamin e", "cedarwood oil"),
        ("morning shaves", "beard care", "travel", "barbershop results at home", "gifting"),
        ("2 Oz", "Gift Kit", "3 Pack", "Travel Size", "Starter Set", "Refill Pack"),
        ("men", "dads", "barbers", "teens"),
    ),
    "nail_care": G(
        "beauty", "Beauty & Personal Care › Foot, Hand & Nail Care",
        ("long lasting", "chip resistant", "quick dry", "cruelty free", "high shine",
         "easy remove", "salon quality", "non toxic", "gel effect", "natural nails",
         "travel size", "vegan formula", "glossy finish", "easy apply", "strong hold"),
        (("color_lip", 0.5, 3, 8), ("count", 0.3, 2, 4), ("style_grooming", 0.1, 2, 3)),
        ("Glossy", "Salon", "Pro", "Quick Dry", "Shimmer", "Classic", "Pastel"),
        ("keratin", "calcium", "argan oil", "vitamin e", "acetone free formula"),
        ("home manicures", "salon nights", "travel", "special occasions", "daily nail care"),
        ("0.5 Fl Oz", "6 Colors", "24 Pieces", "Kit", "Set of 12", "Mini"),
        ("women", "teens", "nail techs", "beginners"),
    ),
    # ---------------------------------------------------------------- electronics
    "audio": G(
        "electronics", "Electronics › Headphones, Earbuds & Accessories",
        ("noise cancelling", "fast charging", "hands free", "water resistant", "stereo sound",
         "deep bass", "built in microphone", "carrying case", "usb c", "wireless bluetooth",
         "long playtime", "touch control", "sweat proof", "easy pairing", "foldable design",
         "low latency"),
        (("color_device", 0.75, 2, 5), ("style_headphone", 0.25, 2, 3)),
        ("Wireless", "Bluetooth", "Hi-Fi", "Sport", "Studio", "Premium", "Compact", "True Wireless"),
        ("graphene drivers", "memory foam ear cushions", "aluminum housing", "silicone ear tips"),
        ("workouts", "commutes", "long flights", "gaming sessions", "working from home"),
        ("40H Playtime", "Bluetooth 5.3", "IPX7", "With Mic", "Charging Case", "2 Pack"),
        ("adults", "kids", "gamers", "runners"),
    ),
    "speakers_tv": G(
        "electronics", "Electronics › Television & Video",
        ("high definition", "easy install", "wall mount", "remote control", "stereo sound",
         "surround sound", "heavy duty", "plug play", "voice control", "dolby audio",
         "usb c", "wireless bluetooth", "low latency", "compact size", "energy saving"),
        (("color_device", 0.4, 2, 4), ("size_tv", 0.4, 2, 5), ("size_cable", 0.2, 2, 5)),
        ("4K", "Ultra HD", "Smart", "Slim", "Full Motion", "Home Theater", "Portable"),
        ("steel brackets", "aluminum alloy", "braided nylon", "tempered glass", "ABS housing"),
        ("movie nights", "living rooms", "bedrooms", "gaming setups", "outdoor parties"),
        ("4K 60Hz", "6 Feet", "Universal", "2 Pack", "With Remote", "1080P"),
        ("families", "gamers", "movie fans", "offices"),
    ),
    "phone_acc": G(
        "electronics", "Electronics › Cell Phones & Accessories",
        ("shock absorbing", "wireless charging", "fast charging", "easy install", "bubble free",
         "scratch resistant", "usb c", "heavy duty", "tempered glass", "slim profile",
         "raised edges", "magnetic mount", "case friendly", "anti fingerprint", "drop protection"),
        (("color_device", 0.6, 2, 6), ("size_screen", 0.35, 2, 4), ("style_phone_case", 0.25, 2, 4)),
        ("Slim", "Rugged", "Clear", "Magnetic", "Fast", "Ultra Thin", "Shockproof", "Premium"),
        ("TPU bumpers", "polycarbonate", "tempered glass", "braided nylon", "silicone"),
        ("daily carry", "road trips", "travel", "the office", "outdoor adventures"),
        ("2 Pack", "6.1 Inch", "20W", "With Camera Protector", "10 Feet", "3 Pack"),
        ("phone users", "kids", "travelers", "drivers"),
    ),
    "computer_acc": G(
        "electronics", "Electronics › Computers & Accessories",
        ("ergonomic design", "plug play", "quiet click", "usb c", "adjustable height",
         "non slip", "rgb backlit", "heavy duty", "aluminum alloy", "easy carry",
         "wireless connection", "long battery", "water resistant", "high speed", "dual mode",
         "cable management"),
        (("color_device", 0.5, 2, 5), ("connectivity", 0.3, 2, 3), ("size_laptop", 0.3, 2, 5),
         ("style_keyboard", 0.15, 2, 3)),
        ("Ergonomic", "Wireless", "Portable", "Slim", "Gaming", "Pro", "Compact", "Foldable"),
        ("aluminum alloy", "ABS plastic", "memory foam", "silicone feet", "PU leather"),
        ("home offices", "gaming", "students", "travel", "long work days"),
        ("2.4G", "USB 3.0", "7 in 1", "Full Size", "Rechargeable", "Adjustable"),
        ("students", "gamers", "office workers", "programmers"),
    ),
    "camera": G(
        "electronics", "Electronics › Camera & Photo",
        ("high definition", "image stabilization", "remote shutter", "easy carry", "heavy duty",
         "quick release", "adjustable height", "night vision", "wide angle", "water resistant",
         "carrying case", "light weight", "dimmable light", "phone holder", "long battery"),
        (("color_device", 0.35, 2, 4), ("capacity_memory", 0.3, 2, 4), ("size_tool", 0.25, 2, 4)),
        ("Professional", "Portable", "Compact", "4K", "Travel", "Vlogging", "Lightweight"),
        ("aluminum legs", "carbon fiber", "ABS shell", "optical glass", "padded nylon"),
        ("vlogging", "travel photos", "live streams", "family events", "product photography"),
        ("60 Inch", "4K 30FPS", "With Remote", "10 Inch", "Kit", "2 Batteries"),
        ("creators", "beginners", "travelers", "photographers"),
    ),
    "smart_home": G(
        "electronics", "Electronics › Security & Surveillance",
        ("night vision", "motion detection", "two way audio", "easy install", "voice control",
         "app control", "weather resistant", "cloud storage", "energy saving", "wide angle",
         "high definition", "remote control", "timer function", "no hub required", "color changing"),
        (("color_device", 0.35, 2, 3), ("pack", 0.4, 2, 4), ("size_cable", 0.15, 2, 4)),
        ("Smart", "WiFi", "Indoor", "Outdoor", "2K", "Wireless", "Compact"),
        ("ABS housing", "infrared LEDs", "weatherproof shell", "silicone strip"),
        ("home security", "nurseries", "front porches", "bedrooms", "parties"),
        ("2 Pack", "1080P", "4 Pack", "32.8 Feet", "2.4GHz", "With Remote"),
        ("homeowners", "renters", "parents", "pet owners"),
    ),
    "wearables": G(
        "electronics", "Electronics › Wearable Technology",
        ("heart rate", "sleep tracking", "water resistant", "long battery", "quick release",
         "step counter", "soft silicone", "adjustable strap", "fast charging", "touch screen",
         "message alerts", "sweat proof", "light weight", "breathable band", "easy install"),
        (("color_device", 0.7, 2, 6), ("size_band", 0.45, 2, 4)),
        ("Sport", "Fitness", "Smart", "Slim", "Classic", "Active", "Rugged"),
        ("silicone", "nylon loop", "stainless steel mesh", "leather", "TPU"),
        ("workouts", "sleep tracking", "swimming", "daily wear", "running"),
        ("3 Pack", "41mm", "1.7 Inch", "IP68", "14 Day Battery", "2 Pack"),
        ("women", "men", "kids", "runners"),
    ),
    "power": G(
        "electronics", "Electronics › Power Accessories",
        ("surge protection", "fast charging", "usb c", "heavy duty", "flat plug",
         "long lasting", "wall mount", "overload protection", "compact size", "led indicator",
         "rechargeable battery", "travel friendly", "multiple outlets", "fire resistant", "foldable plug"),
        (("capacity_battery", 0.3, 2, 4), ("size_cable", 0.35, 2, 5), ("pack", 0.3, 2, 4)),
        ("Heavy Duty", "Compact", "Portable", "Slim", "Fast", "Universal", "Smart"),
        ("copper wiring", "fire retardant shell", "lithium polymer cells", "braided jacket"),
        ("home offices", "travel", "camping", "dorm rooms", "power outages"),
        ("6 Outlets", "10 Feet", "20000mAh", "4 Pack", "65W", "24 Count"),
        ("travelers", "students", "families", "campers"),
    ),
    # ---------------------------------------------------------------- fashion
    "women_clothing": G(
        "fashion", "Clothing, Shoes & Jewelry › Women › Clothing",
        ("machine washable", "high waist", "tummy control", "quick drying", "moisture wicking",
         "relaxed fit", "button closure", "elastic waistband", "long sleeve", "short sleeve",
         "soft fabric", "polyester spandex", "cotton blend", "pull on", "drawstring closure",
         "stretch fabric", "daily wear", "slim fit", "hand wash"),
        (("color_apparel", 0.9, 2, 6), ("size_apparel", 0.85, 3, 6), ("fit_type", 0.08, 2, 3)),
        ("Casual", "Loose", "Classic", "Cozy", "Summer", "Elegant", "Stretchy", "Vintage", "Boho"),
        ("cotton", "rayon", "linen blend", "modal", "polyester", "french terry"),
        ("everyday wear", "the office", "weekend trips", "workouts", "date nights", "lounging"),
        ("S-XXL", "2 Pack", "Plus Size", "With Pockets", "Regular Fit", "Long"),
        ("women", "juniors", "moms", "teen girls"),
    ),
    "men_clothing": G(
        "fashion", "Clothing, Shoes & Jewelry › Men › Clothing",
        ("machine washable", "moisture wicking", "quick drying", "relaxed fit", "slim fit",
         "button closure", "elastic waistband", "long sleeve", "short sleeve", "cotton blend",
         "drawstring closure", "stretch fabric", "classic fit", "wrinkle resistant", "tag free",
         "zipper pockets", "daily wear", "regular fit"),
        (("color_apparel", 0.9, 2, 6), ("size_apparel", 0.85, 3, 6), ("fit_type", 0.12, 2, 3)),
        ("Classic", "Athletic", "Casual", "Heavyweight", "Lightweight", "Essential", "Rugged"),
        ("cotton", "polyester", "fleece", "denim", "nylon", "merino wool"),
        ("everyday wear", "the gym", "the office", "hiking", "weekends", "travel"),
        ("3 Pack", "Big & Tall", "Regular Fit", "With Pockets", "S-3XL", "Long"),
        ("men", "dads", "teen boys", "athletes"),
    ),
    "women_shoes": G(
        "fashion", "Clothing, Shoes & Jewelry › Women › Shoes",
        ("rubber sole", "non slip", "arch support", "memory foam", "lace up", "slip resistant",
         "breathable mesh", "wide width", "ankle strap", "cushioned insole", "faux fur",
         "easy slip", "light weight", "open toe", "water resistant"),
        (("color_shoe", 0.9, 2, 5), ("size_shoe_women", 0.9, 4, 7)),
        ("Comfort", "Casual", "Walking", "Platform", "Classic", "Lightweight", "Cushioned"),
        ("suede", "faux leather", "knit mesh", "EVA foam", "rubber", "canvas"),
        ("walking", "running errands", "the office", "summer days", "travel"),
        ("Wide Width", "Size 5-11", "Memory Foam", "Non Slip", "Lightweight", "Classic"),
        ("women", "teen girls", "nurses", "moms"),
    ),
    "men_shoes": G(
        "fashion", "Clothing, Shoes & Jewelry › Men › Shoes",
        ("rubber sole", "non slip", "arch support", "memory foam", "lace up", "slip resistant",
         "breathable mesh", "wide width", "steel toe", "water resistant", "cushioned insole",
         "leather upper", "light weight", "shock absorbing", "easy slip"),
        (("color_shoe", 0.9, 2, 5), ("size_shoe_men", 0.9, 4, 7)),
        ("Rugged", "Classic", "Athletic", "Comfort", "Lightweight", "Outdoor", "Casual"),
        ("full grain leather", "suede", "knit mesh", "EVA foam", "rubber", "nubuck"),
        ("hiking", "job sites", "the office", "running", "weekends"),
        ("Wide Width", "Size 7-13", "Waterproof", "Lightweight", "Classic", "Steel Toe"),
        ("men", "teen boys", "workers", "runners"),
    ),
    "kids_clothing": G(
        "fashion", "Clothing, Shoes & Jewelry › Girls & Boys",
        ("machine washable", "soft fabric", "cotton blend", "easy on", "tag free",
         "snap closure", "long sleeve", "short sleeve", "non slip", "elastic waistband",
         "durable fabric", "breathable fabric", "cute print", "quick drying", "gift ready"),
        (("color_apparel", 0.85, 2, 5), ("size_kids", 0.6, 3, 6), ("size_baby", 0.25, 3, 5)),
        ("Cute", "Cozy", "Playful", "Soft", "Classic", "Colorful", "Little"),
        ("organic cotton", "fleece", "jersey knit", "muslin", "rubber"),
        ("school days", "playtime", "birthday parties", "naps", "family photos"),
        ("2 Pack", "Toddler", "3 Piece Set", "Size 2T-12", "Gift Set", "Set"),
        ("girls", "boys", "toddlers", "babies"),
    ),
    "bags_acc": G(
        "fashion", "Clothing, Shoes & Jewelry › Accessories",
        ("water resistant", "light weight", "gift box", "easy carry", "classic style",
         "everyday use", "soft lining"),
        (("color_apparel", 0.8, 2, 6), ("size_onesize", 0.3, 2, 3), ("style_bag", 0.2, 2, 4)),
        ("Classic", "Vintage", "Minimalist", "Travel", "Everyday", "Slim", "Oversized"),
        ("vegan leather", "canvas", "nylon", "genuine leather", "wool blend", "acrylic knit"),
        ("daily commutes", "travel", "the office", "winter walks", "beach days"),
        ("Gift Box", "One Size", "2 Pack", "Large", "Slim", "Set of 3"),
        ("women", "men", "teens", "travelers"),
    ),
    "jewelry": G(
        "fashion", "Clothing, Shoes & Jewelry › Jewelry",
        ("sterling silver", "hypoallergenic metal", "gift box", "adjustable chain", "tarnish resistant",
         "gold plated", "nickel free", "cubic zirconia", "dainty design", "lobster clasp",
         "stainless steel", "stackable design", "birthstone charm", "water resistant", "engraved message"),
        (("color_metal", 0.7, 2, 4), ("size_ring", 0.2, 3, 6), ("style_jewelry", 0.3, 2, 4),
         ("material_jewelry", 0.15, 2, 3)),
        ("Dainty", "Classic", "Minimalist", "Vintage", "Elegant", "Sparkling", "Personalized"),
        ("sterling silver", "14k gold plating", "titanium steel", "freshwater pearls", "crystal"),
        ("anniversaries", "birthdays", "everyday wear", "weddings", "holidays"),
        ("18 Inch", "Gift Box", "Set of 3", "Adjustable", "2 Pairs", "Size 5-10"),
        ("women", "men", "girls", "moms"),
    ),
    # ---------------------------------------------------------------- grocery
    "snacks": G(
        "grocery", "Grocery & Gourmet Food › Snacks",
        ("gluten free", "non gmo", "high protein", "low sugar", "keto friendly", "plant based",
         "dairy free", "individually wrapped", "resealable bag", "whole grain", "kosher certified",
         "low calorie", "nut free", "no preservatives", "high fiber", "low carb", "simple ingredients"),
        (("flavor_savory", 0.5, 2, 6), ("flavor_sweet", 0.3, 2, 6), ("size_weight_food", 0.5, 2, 4)),
        ("Crunchy", "Savory", "Sweet", "Wholesome", "Crispy", "Chewy", "Roasted", "Kettle"),
        ("sea salt", "whole oats", "almonds", "sunflower oil", "brown rice", "chickpeas", "honey"),
        ("lunch boxes", "road trips", "after workouts", "movie nights", "the office"),
        ("12 Pack", "1.5 Oz Bags", "Variety Pack", "24 Count", "Family Size", "6 Pack"),
        ("kids", "adults", "athletes", "families"),
    ),
    "beverages": G(
        "grocery", "Grocery & Gourmet Food › Beverages",
        ("caffeine free", "zero sugar", "non gmo", "fair trade", "natural flavors", "keto friendly",
         "gluten free", "individually wrapped", "kosher certified", "low calorie", "plant based",
         "single origin", "whole bean", "no artificial colors", "electrolyte blend", "cold brew"),
        (("flavor_drink", 0.75, 2, 6), ("size_drink", 0.5, 2, 4)),
        ("Smooth", "Bold", "Refreshing", "Organic", "Sparkling", "Classic", "Premium", "Light"),
        ("arabica beans", "green tea leaves", "cane sugar", "coconut water", "cocoa", "ginger root"),
        ("busy mornings", "the office", "after workouts", "afternoon breaks", "picnics"),
        ("12 Pack", "100 Count", "24 Cans", "2 Pound Bag", "Variety Pack", "40 Pods"),
        ("coffee lovers", "tea drinkers", "athletes", "families"),
    ),
    "pantry": G(
        "grocery", "Grocery & Gourmet Food › Pantry Staples",
        ("gluten free", "non gmo", "no preservatives", "kosher certified", "low sodium",
         "extra virgin", "plant based", "cold pressed", "small batch", "sugar free",
         "whole grain", "raw unfiltered", "vegan friendly", "family size", "ready made", "all natural"),
        (("flavor_pantry", 0.55, 2, 5), ("size_weight_food", 0.55, 2, 4), ("pack", 0.15, 2, 3)),
        ("Classic", "Gourmet", "Homestyle", "Artisan", "Traditional", "Everyday", "Premium"),
        ("ripe tomatoes", "cold pressed olives", "wildflower nectar", "whole wheat", "spices"),
        ("weeknight dinners", "meal prep", "baking days", "family breakfasts", "holiday cooking"),
        ("16 Oz Jar", "2 Pack", "32 Oz", "Family Size", "6 Count", "5 Pound"),
        ("home cooks", "bakers", "families", "chefs"),
    ),
    "candy": G(
        "grocery", "Grocery & Gourmet Food › Candy & Chocolate",
        ("individually wrapped", "gluten free", "sugar free", "dark chocolate", "fair trade",
         "gift box", "nut free", "kosher certified", "vegan friendly", "party size", "resealable bag",
         "natural flavors", "holiday gift", "bulk candy", "fat free"),
        (("flavor_sweet", 0.7, 2, 6), ("size_weight_food", 0.5, 2, 4)),
        ("Assorted", "Classic", "Chewy", "Gourmet", "Fruity", "Creamy", "Sour", "Festive"),
        ("cocoa beans", "cane sugar", "real fruit juice", "sea salt", "milk chocolate"),
        ("holidays", "party favors", "movie nights", "office candy jars", "gifting"),
        ("2 Pound Bag", "Gift Box", "Variety Pack", "24 Count", "Bulk", "12 Bars"),
        ("kids", "chocolate lovers", "party hosts", "families"),
    ),
    "baking": G(
        "grocery", "Grocery & Gourmet Food › Cooking & Baking",
        ("gluten free", "non gmo", "keto friendly", "grain free", "kosher certified",
         "plant based", "no preservatives", "easy prep", "pure extract", "finely ground",
         "sugar free", "vegan friendly", "dairy free", "resealable bag", "family size"),
        (("flavor_sweet", 0.45, 2, 5), ("size_weight_food", 0.6, 2, 4)),
        ("Classic", "Bakery Style", "Fine", "Homemade", "Premium", "Blanched", "Pure"),
        ("almonds", "cane sugar", "cocoa", "vanilla beans", "coconut", "cassava"),
        ("birthday cakes", "holiday baking", "weekend pancakes", "cookie swaps", "bread making"),
        ("2 Pound Bag", "16 Oz", "4 Pack", "Family Size", "8 Oz Bottle", "3 Pack"),
        ("bakers", "home cooks", "families", "kids"),
    ),
    # ---------------------------------------------------------------- garden (home, kitchen, patio)
    "bedding": G(
        "garden", "Home & Kitchen › Bedding",
        ("machine washable", "double sided", "hidden zipper", "soft microfiber", "cooling fabric",
         "deep pocket", "hypoallergenic fill", "wrinkle resistant", "fade resistant", "all season",
         "breathable cotton", "memory foam", "easy care", "fits most", "down alternative",
         "living room", "velvet fabric"),
        (("color_home", 0.85, 2, 6), ("size_pillow", 0.35, 2, 5), ("size_bed", 0.5, 2, 5),
         ("pattern", 0.2, 2, 4)),
        ("Luxury", "Soft", "Cozy", "Farmhouse", "Modern", "Boho", "Classic", "Plush"),
        ("microfiber", "cotton", "velvet", "linen", "sherpa", "bamboo viscose"),
        ("bedrooms", "living rooms", "guest rooms", "dorms", "couches"),
        ("Set of 2", "Queen", "4 Piece", "18 x 18 Inch", "King", "Twin"),
        ("families", "kids", "hot sleepers", "guests"),
    ),
    "furniture": G(
        "garden", "Home & Kitchen › Furniture",
        ("easy assemble", "solid wood", "living room", "space saving", "heavy duty",
         "storage space", "mid century", "faux leather", "metal frame", "padded seat",
         "adjustable height", "lumbar support", "anti tip", "open shelves", "engineered wood",
         "soft cushion", "stain resistant"),
        (("color_wood", 0.65, 2, 5), ("style_furniture", 0.25, 2, 3), ("material_furniture", 0.15, 2, 3)),
        ("Modern", "Rustic", "Industrial", "Farmhouse", "Mid-Century", "Minimalist", "Classic"),
        ("solid pine", "engineered wood", "powder coated steel", "linen fabric", "rattan", "bamboo"),
        ("living rooms", "home offices", "entryways", "bedrooms", "small apartments"),
        ("2 Tier", "Set of 2", "47 Inch", "5 Shelf", "Large", "With Drawers"),
        ("families", "renters", "students", "home offices"),
    ),
    "kitchen": G(
        "garden", "Home & Kitchen › Kitchen & Dining",
        ("dishwasher safe", "bpa free", "non stick", "oven safe", "stainless steel",
         "easy clean", "leak proof", "heat resistant", "food grade", "double wall",
         "stackable design", "ergonomic handle", "induction compatible", "airtight lids",
         "rust resistant", "gift box"),
        (("color_kitchen", 0.6, 2, 5), ("size_drinkware", 0.3, 2, 4), ("size_cookware", 0.3, 2, 4),
         ("set_size", 0.2, 2, 3)),
        ("Professional", "Everyday", "Premium", "Nonstick", "Insulated", "Classic", "Chef's"),
        ("stainless steel", "borosilicate glass", "bamboo", "cast iron", "ceramic", "silicone"),
        ("weeknight dinners", "meal prep", "entertaining", "camping", "holiday baking"),
        ("Set of 4", "12 Inch", "32 Oz", "10 Piece", "2 Pack", "Large"),
        ("home cooks", "families", "chefs", "students"),
    ),
    "decor": G(
        "garden", "Home & Kitchen › Home Décor",
        ("ready hang", "living room", "blackout lining", "fade resistant", "easy install",
         "energy saving", "dimmable light", "handmade design", "non slip", "machine washable",
         "thermal insulated", "stain resistant", "modern design", "gift ready", "lead free"),
        (("color_home", 0.8, 2, 6), ("size_wall", 0.3, 2, 5), ("size_curtain", 0.25, 2, 5),
         ("size_rug", 0.25, 2, 5), ("style_lamp", 0.1, 2, 3)),
        ("Modern", "Boho", "Rustic", "Farmhouse", "Vintage", "Abstract", "Coastal", "Minimalist"),
        ("canvas", "polyester", "ceramic", "soy wax", "rattan", "jute", "brass"),
        ("living rooms", "bedrooms", "nurseries", "home offices", "entryways"),
        ("Set of 3", "2 Panels", "5 x 7 Feet", "16 x 20 Inch", "Large", "Set of 2"),
        ("homeowners", "renters", "families", "designers"),
    ),
    "bath": G(
        "garden", "Home & Kitchen › Bath",
        ("quick drying", "highly absorbent", "machine washable", "non slip", "rust resistant",
         "mildew resistant", "soft cotton", "easy install", "water repellent", "hotel quality",
         "extra large", "thick plush", "fade resistant", "no drilling", "anti mold"),
        (("color_home", 0.85, 2, 6), ("set_size", 0.35, 2, 3)),
        ("Luxury", "Hotel", "Plush", "Modern", "Spa", "Soft", "Quick Dry"),
        ("turkish cotton", "microfiber", "bamboo", "stainless steel", "memory foam", "polyester"),
        ("master baths", "guest baths", "kids bathrooms", "spa days", "gym bags"),
        ("Set of 6", "2 Pack", "72 x 72 Inch", "Large", "4 Piece", "Extra Long"),
        ("families", "guests", "kids", "couples"),
    ),
    "patio": G(
        "garden", "Patio, Lawn & Garden",
        ("weather resistant", "heavy duty", "easy assemble", "rust resistant", "fade resistant",
         "easy install", "long lasting", "easy clean", "gift ready"),
        (("color_garden", 0.7, 2, 5), ("pack", 0.35, 2, 4)),
        ("Outdoor", "Heavy Duty", "Solar", "Garden", "Weatherproof", "Rustic", "Decorative"),
        ("powder coated steel", "resin wicker", "olefin fabric", "recycled plastic", "cedar"),
        ("patios", "backyard gardens", "balconies", "decks", "pool parties"),
        ("4 Pack", "50 Feet", "9 Feet", "Set of 2", "Large", "12 Inch"),
        ("gardeners", "homeowners", "bird watchers", "families"),
    ),
    "storage": G(
        "garden", "Home & Kitchen › Storage & Organization",
        ("space saving", "stackable design", "foldable design", "easy assemble", "clear view",
         "reinforced handles", "dust proof", "large capacity", "heavy duty", "bpa free",
         "non slip", "label holders", "multi purpose", "sturdy frame", "breathable fabric"),
        (("color_home", 0.6, 2, 5), ("size_storage", 0.5, 2, 4)),
        ("Collapsible", "Stackable", "Clear", "Woven", "Heavy Duty", "Slim", "Modern"),
        ("non-woven fabric", "cotton rope", "PP plastic", "steel wire", "bamboo"),
        ("closets", "pantries", "nurseries", "garages", "dorm rooms"),
        ("Set of 3", "6 Pack", "Large", "4 Tier", "2 Pack", "Set of 4"),
        ("families", "renters", "students", "organizers"),
    ),
}
del G

T = ProductType
PRODUCT_TYPES: tuple[ProductType, ...] = (
    # ------------------------------------------------------------------ beauty (48)
    T("face moisturizer", "skin_care", "Face › Creams & Moisturizers", 8, 48, False, ("Face Moisturizer", "Daily Face Cream")),
    T("facial cleanser", "skin_care", "Face › Cleansers", 6, 32, False, ("Facial Cleanser", "Foaming Face Wash")),
    T("face serum", "skin_care", "Face › Serums", 9, 55, False, ("Face Serum", "Facial Serum Drops")),
    T("eye cream", "skin_care", "Eyes › Creams", 10, 60, False, ("Eye Cream", "Under Eye Cream")),
    T("sunscreen lotion", "skin_care", "Sunscreens & Tanning Products › Sunscreens", 7, 30, False, ("Sunscreen Lotion", "Mineral Sunscreen")),
    T("sheet masks", "skin_care", "Face › Masks", 5, 28, True, ("Sheet Masks", "Face Sheet Mask Set")),
    T("body lotion", "skin_care", "Body › Moisturizers › Lotions", 6, 30, False, ("Body Lotion", "Moisturizing Body Lotion")),
    T("hand cream", "skin_care", "Hands & Nails › Hand Creams", 4, 22, False, ("Hand Cream", "Hand Cream Set")),
    T("lip balm", "skin_care", "Lip Care › Balms & Moisturizers", 3, 16, False, ("Lip Balm", "Tinted Lip Balm")),
    T("exfoliating scrub", "skin_care", "Body › Scrubs & Body Treatments", 6, 34, False, ("Exfoliating Scrub", "Body Scrub")),
    T("shampoo", "hair_care", "Shampoo & Conditioner › Shampoos", 6, 38, False, ("Shampoo", "Moisture Shampoo")),
    T("conditioner", "hair_care", "Shampoo & Conditioner › Conditioners", 6, 38, False, ("Conditioner", "Daily Conditioner")),
    T("hair mask", "hair_care", "Hair & Scalp Treatments › Masks", 8, 40, False, ("Hair Mask", "Deep Repair Hair Mask")),
    T("hair oil", "hair_care", "Hair & Scalp Treatments › Oils", 7, 36, False, ("Hair Oil", "Scalp and Hair Oil")),
    T("dry shampoo", "hair_care", "Shampoo & Conditioner › Dry Shampoos", 5, 26, False, ("Dry Shampoo", "Dry Shampoo Spray")),
    T("curl cream", "hair_care", "Styling Products › Creams", 7, 30, False, ("Curl Cream", "Curl Defining Cream")),
    T("leave in conditioner", "hair_care", "Shampoo & Conditioner › Leave-In Conditioners", 7, 32, False, ("Leave In Conditioner", "Leave-In Spray")),
    T("foundation", "makeup", "Face › Foundation", 8, 52, False, ("Foundation", "Liquid Foundation")),
    T("lipstick", "makeup", "Lips › Lipstick", 5, 32, False, ("Lipstick", "Matte Lipstick")),
    T("mascara", "makeup", "Eyes › Mascara", 5, 30, False, ("Mascara", "Volumizing Mascara")),
    T("eyeliner", "makeup", "Eyes › Eyeliner", 4, 24, False, ("Eyeliner", "Liquid Eyeliner Pen")),
    T("eyeshadow palette", "makeup", "Eyes › Eyeshadow", 8, 55, False, ("Eyeshadow Palette", "Eye Shadow Palette")),
    T("setting powder", "makeup", "Face › Powder", 7, 38, False, ("Setting Powder", "Loose Setting Powder")),
    T("concealer", "makeup", "Face › Concealers & Neutralizers", 6, 34, False, ("Concealer", "Under Eye Concealer")),
    T("makeup brushes", "makeup", "Tools & Accessories › Brushes & Applicators", 9, 45, True, ("Makeup Brush Set", "Makeup Brushes")),
    T("perfume", "fragrance_bath", "Fragrance › Women's › Eau de Parfum", 18, 120, False, ("Perfume", "Eau de Parfum Spray")),
    T("body wash", "fragrance_bath", "Bath & Bathing Accessories › Body Washes", 5, 26, False, ("Body Wash", "Shower Gel")),
    T("bath bombs", "fragrance_bath", "Bath & Bathing Accessories › Bath Bombs", 8, 36, True, ("Bath Bombs", "Bath Bomb Gift Set")),
    T("body mist", "fragrance_bath", "Fragrance › Body Sprays", 7, 34, False, ("Body Mist", "Fragrance Mist")),
    T("bar soap", "fragrance_bath", "Bath & Bathing Accessories › Soaps", 4, 28, False, ("Bar Soap", "Natural Soap Bars")),
    T("deodorant", "fragrance_bath", "Deodorants & Antiperspirants", 5, 22, False, ("Deodorant", "Deodorant Stick")),
    T("bath salts", "fragrance_bath", "Bath & Bathing Accessories › Bath Salts", 6, 30, True, ("Bath Salts", "Soaking Salts")),
    T("toothpaste", "oral_care", "Toothpaste", 3, 20, False, ("Toothpaste", "Whitening Toothpaste")),
    T("electric toothbrush", "oral_care", "Toothbrushes › Power Toothbrushes", 18, 120, False, ("Electric Toothbrush", "Sonic Toothbrush")),
    T("water flosser", "oral_care", "Water Flossers", 25, 90, False, ("Water Flosser", "Cordless Water Flosser")),
    T("mouthwash", "oral_care", "Mouthwash", 4, 18, False, ("Mouthwash", "Mouth Rinse")),
    T("teeth whitening strips", "oral_care", "Teeth Whitening › Strips", 12, 50, True, ("Teeth Whitening Strips", "Whitening Strips")),
    T("hair dryer", "hair_tools", "Hair Dryers", 20, 180, False, ("Hair Dryer", "Ionic Blow Dryer")),
    T("flat iron", "hair_tools", "Straightening Irons", 20, 150, False, ("Flat Iron", "Hair Straightener")),
    T("curling iron", "hair_tools", "Curling Irons", 18, 110, False, ("Curling Iron", "Curling Wand")),
    T("hot air brush", "hair_tools", "Hot-Air Brushes", 25, 90, False, ("Hot Air Brush", "Blow Dryer Brush")),
    T("beard oil", "grooming", "Men's › Beard Care › Oils", 7, 30, False, ("Beard Oil", "Beard Growth Oil")),
    T("shaving cream", "grooming", "Men's › Shaving Creams", 5, 24, False, ("Shaving Cream", "Shave Cream")),
    T("beard trimmer", "grooming", "Men's › Trimmers", 20, 90, False, ("Beard Trimmer", "Cordless Trimmer Kit")),
    T("safety razor", "grooming", "Men's › Razors & Blades", 12, 55, False, ("Safety Razor", "Double Edge Razor")),
    T("nail polish", "nail_care", "Nail Polish", 4, 24, False, ("Nail Polish", "Nail Lacquer Set")),
    T("press on nails", "nail_care", "Nail Art › Artificial Nails", 5, 22, True, ("Press On Nails", "Fake Nails Kit")),
    T("gel nail kit", "nail_care", "Nail Polish › Gel Kits", 20, 70, False, ("Gel Nail Kit", "Gel Polish Starter Kit")),
    T("cuticle oil", "nail_care", "Nail Care › Cuticle Care", 4, 18, False, ("Cuticle Oil", "Cuticle Oil Pen")),
    # ------------------------------------------------------------------ electronics (46)
    T("wireless earbuds", "audio", "Earbud Headphones", 15, 160, True, ("Wireless Earbuds", "True Wireless Earbuds")),
    T("over ear headphones", "audio", "Over-Ear Headphones", 25, 300, True, ("Over Ear Headphones", "Over-Ear Bluetooth Headphones")),
    T("bluetooth speaker", "audio", "Portable Speakers", 18, 180, False, ("Bluetooth Speaker", "Portable Speaker")),
    T("gaming headset", "audio", "Gaming Headsets", 20, 150, False, ("Gaming Headset", "Gaming Headphones")),
    T("kids headphones", "audio", "Kids' Headphones", 12, 50, True, ("Kids Headphones", "Headphones for Kids")),
    T("bone conduction headphones", "audio", "Open-Ear Headphones", 35, 160, True, ("Bone Conduction Headphones", "Open Ear Headphones")),
    T("soundbar", "speakers_tv", "Home Audio › Sound Bars", 40, 400, False, ("Soundbar", "TV Sound Bar")),
    T("tv wall mount", "speakers_tv", "TV Mounts, Stands & Turntables", 18, 120, False, ("TV Wall Mount", "Full Motion TV Mount")),
    T("hdmi cable", "speakers_tv", "Cables › HDMI Cables", 6, 30, False, ("HDMI Cable", "High Speed HDMI Cord")),
    T("mini projector", "speakers_tv", "Video Projectors", 50, 400, False, ("Mini Projector", "Portable Projector")),
    T("projector screen", "speakers_tv", "Projection Screens", 25, 160, False, ("Projector Screen", "Pull Down Projection Screen")),
    T("tv antenna", "speakers_tv", "Antennas", 12, 60, False, ("TV Antenna", "Indoor HD Antenna")),
    T("universal remote", "speakers_tv", "Remote Controls", 8, 45, False, ("Universal Remote", "Universal Remote Control")),
    T("phone case", "phone_acc", "Cases, Holsters & Sleeves", 6, 40, False, ("Phone Case", "Protective Phone Case")),
    T("screen protector", "phone_acc", "Screen Protectors", 5, 22, False, ("Screen Protector", "Glass Screen Protector")),
    T("wall charger", "phone_acc", "Chargers & Power Adapters › Wall Chargers", 8, 40, False, ("Wall Charger", "USB C Wall Charger")),
    T("car phone mount", "phone_acc", "Car Accessories › Cradles", 10, 45, False, ("Car Phone Mount", "Car Phone Holder")),
    T("charging cable", "phone_acc", "Cables", 5, 25, False, ("Charging Cable", "Fast Charging Cord")),
    T("wireless charger", "phone_acc", "Chargers & Power Adapters › Wireless Chargers", 12, 60, False, ("Wireless Charger", "Wireless Charging Pad")),
    T("phone tripod", "phone_acc", "Selfie Sticks & Tripods", 12, 50, False, ("Phone Tripod", "Selfie Stick Tripod")),
    T("wireless mouse", "computer_acc", "Computer Accessories › Keyboards, Mice & Accessories › Mice", 9, 70, False, ("Wireless Mouse", "Ergonomic Mouse")),
    T("mechanical keyboard", "computer_acc", "Computer Accessories › Keyboards", 30, 180, False, ("Mechanical Keyboard", "Gaming Keyboard")),
    T("laptop stand", "computer_acc", "Laptop Accessories › Stands", 15, 70, False, ("Laptop Stand", "Adjustable Laptop Riser")),
    T("usb hub", "computer_acc", "Computer Accessories › USB Hubs", 10, 60, False, ("USB Hub", "USB C Hub Adapter")),
    T("webcam", "computer_acc", "Computer Accessories › Webcams", 20, 150, False, ("Webcam", "HD Web Camera")),
    T("mouse pad", "computer_acc", "Computer Accessories › Mouse Pads", 6, 35, False, ("Mouse Pad", "Desk Mat Mouse Pad")),
    T("laptop sleeve", "computer_acc", "Laptop Accessories › Bags, Cases & Sleeves", 12, 45, False, ("Laptop Sleeve", "Laptop Case")),
    T("monitor arm", "computer_acc", "Monitor Accessories › Arms & Mounts", 25, 140, False, ("Monitor Arm", "Monitor Mount")),
    T("camera tripod", "camera", "Tripods & Monopods", 18, 160, False, ("Camera Tripod", "Travel Tripod")),
    T("ring light", "camera", "Lighting & Studio › Ring Lights", 15, 90, False, ("Ring Light", "Selfie Ring Light")),
    T("action camera", "camera", "Video › Action Cameras", 40, 350, False, ("Action Camera", "4K Action Cam")),
    T("memory card", "camera", "Memory Cards", 7, 90, False, ("Memory Card", "Micro SD Card")),
    T("camera bag", "camera", "Bags & Cases", 18, 110, False, ("Camera Bag", "Camera Backpack")),
    T("dash cam", "camera", "Car & Vehicle Electronics › Dash Cams", 30, 200, False, ("Dash Cam", "Car Dash Camera")),
    T("security camera", "smart_home", "Surveillance Cameras", 25, 180, False, ("Security Camera", "Home Security Camera")),
    T("smart plug", "smart_home", "Smart Home › Plugs & Outlets", 8, 40, False, ("Smart Plug", "WiFi Smart Outlet")),
    T("video doorbell", "smart_home", "Smart Home › Doorbells", 35, 200, False, ("Video Doorbell", "Doorbell Camera")),
    T("led strip lights", "smart_home", "Smart Home › Lighting", 10, 50, True, ("LED Strip Lights", "Light Strip")),
    T("baby monitor", "smart_home", "Video Baby Monitors", 35, 220, False, ("Baby Monitor", "Video Baby Monitor")),
    T("smart watch", "wearables", "Smartwatches", 30, 300, False, ("Smart Watch", "Fitness Smartwatch")),
    T("fitness tracker", "wearables", "Activity & Fitness Trackers", 20, 150, False, ("Fitness Tracker", "Activity Tracker")),
    T("watch bands", "wearables", "Smartwatch Accessories › Bands", 6, 30, True, ("Watch Bands", "Replacement Watch Band")),
    T("surge protector", "power", "Power Strips & Surge Protectors", 10, 55, False, ("Surge Protector", "Power Strip Surge Protector")),
    T("power bank", "power", "Portable Power Banks", 15, 90, False, ("Power Bank", "Portable Charger")),
    T("extension cord", "power", "Extension Cords", 8, 45, False, ("Extension Cord", "Outdoor Extension Cord")),
    T("rechargeable batteries", "power", "Batteries › Rechargeable", 10, 55, True, ("Rechargeable Batteries", "AA Rechargeable Batteries")),
    T("solar charger", "power", "Solar Chargers", 25, 160, False, ("Solar Charger", "Solar Panel Charger")),
    # ------------------------------------------------------------------ fashion (48)
    T("women's leggings", "women_clothing", "Active › Leggings", 12, 45, True, ("Women's Leggings", "High Waisted Leggings for Women")),
    T("women's yoga pants", "women_clothing", "Active › Pants", 15, 50, True, ("Women's Yoga Pants", "Flare Yoga Pants")),
    T("women's sweaters", "women_clothing", "Sweaters › Pullovers", 20, 70, True, ("Women's Sweater", "Pullover Sweater for Women")),
    T("women's maxi dresses", "women_clothing", "Dresses › Casual", 22, 75, True, ("Women's Maxi Dress", "Long Maxi Dress")),
    T("women's blouses", "women_clothing", "Tops, Tees & Blouses › Blouses", 15, 50, True, ("Women's Blouse", "Button Down Blouse")),
    T("women's jeans", "women_clothing", "Jeans › Straight", 25, 80, True, ("Women's Jeans", "Straight Leg Jeans for Women")),
    T("women's shorts", "women_clothing", "Shorts › Casual", 12, 40, True, ("Women's Shorts", "Casual Shorts for Women")),
    T("women's swimsuits", "women_clothing", "Swimsuits & Cover Ups › One-Pieces", 18, 60, True, ("Women's Swimsuit", "One Piece Swimsuit")),
    T("women's cardigans", "women_clothing", "Sweaters › Cardigans", 20, 65, True, ("Women's Cardigan", "Open Front Cardigan")),
    T("women's rain jackets", "women_clothing", "Coats, Jackets & Vests › Rain Jackets", 30, 110, True, ("Women's Rain Jacket", "Hooded Rain Coat")),
    T("women's pajama sets", "women_clothing", "Lingerie, Sleep & Lounge › Sleep Sets", 18, 55, True, ("Women's Pajama Set", "Pajama Set for Women")),
    T("women's t-shirts", "women_clothing", "Tops, Tees & Blouses › T-Shirts", 10, 32, True, ("Women's T-Shirt", "Crew Neck Tee")),
    T("men's t-shirts", "men_clothing", "Shirts › T-Shirts", 10, 35, True, ("Men's T-Shirt", "Crew Neck T-Shirt for Men")),
    T("men's polo shirts", "men_clothing", "Shirts › Polos", 15, 50, True, ("Men's Polo Shirt", "Performance Polo")),
    T("men's jeans", "men_clothing", "Jeans › Straight", 25, 80, True, ("Men's Jeans", "Straight Fit Jeans for Men")),
    T("men's hoodies", "men_clothing", "Active › Hoodies", 20, 65, True, ("Men's Hoodie", "Pullover Hooded Sweatshirt")),
    T("men's cargo shorts", "men_clothing", "Shorts › Cargo", 18, 50, True, ("Men's Cargo Shorts", "Cargo Shorts for Men")),
    T("men's dress shirts", "men_clothing", "Shirts › Dress Shirts", 20, 65, True, ("Men's Dress Shirt", "Button Down Dress Shirt")),
    T("men's joggers", "men_clothing", "Active › Pants", 18, 55, True, ("Men's Joggers", "Jogger Sweatpants")),
    T("men's swim trunks", "men_clothing", "Swim › Board Shorts", 15, 45, True, ("Men's Swim Trunks", "Quick Dry Swim Shorts")),
    T("men's rain jackets", "men_clothing", "Jackets & Coats › Rain Jackets", 35, 130, True, ("Men's Rain Jacket", "Packable Rain Shell")),
    T("men's boxer briefs", "men_clothing", "Underwear › Boxer Briefs", 15, 45, True, ("Men's Boxer Briefs", "Boxer Briefs Multipack")),
    T("men's pajama pants", "men_clothing", "Sleep & Lounge › Sleep Bottoms", 15, 40, True, ("Men's Pajama Pants", "Lounge Pants for Men")),
    T("women's running shoes", "women_shoes", "Athletic › Running", 35, 140, True, ("Women's Running Shoes", "Running Sneakers for Women")),
    T("women's sandals", "women_shoes", "Sandals › Flat", 18, 70, True, ("Women's Sandals", "Slide Sandals for Women")),
    T("women's ankle boots", "women_shoes", "Boots › Ankle & Bootie", 35, 130, True, ("Women's Ankle Boots", "Chelsea Booties")),
    T("women's slippers", "women_shoes", "Slippers", 12, 45, True, ("Women's Slippers", "House Slippers for Women")),
    T("women's flats", "women_shoes", "Flats › Ballet Flats", 20, 70, True, ("Women's Flats", "Ballet Flats")),
    T("women's sneakers", "women_shoes", "Fashion Sneakers", 25, 95, True, ("Women's Sneakers", "Canvas Sneakers for Women")),
    T("men's running shoes", "men_shoes", "Athletic › Running", 35, 150, True, ("Men's Running Shoes", "Running Sneakers for Men")),
    T("men's hiking boots", "men_shoes", "Outdoor › Hiking Boots", 45, 180, True, ("Men's Hiking Boots", "Trail Hiking Boots")),
    T("men's loafers", "men_shoes", "Loafers & Slip-Ons", 30, 120, True, ("Men's Loafers", "Penny Loafers")),
    T("men's slippers", "men_shoes", "Slippers", 15, 55, True, ("Men's Slippers", "Moccasin Slippers for Men")),
    T("men's work boots", "men_shoes", "Work & Safety › Boots", 50, 200, True, ("Men's Work Boots", "Steel Toe Work Boots")),
    T("men's sandals", "men_shoes", "Sandals › Sport", 18, 75, True, ("Men's Sandals", "Sport Sandals for Men")),
    T("girls' dresses", "kids_clothing", "Girls › Clothing › Dresses", 12, 45, True, ("Girls' Dress", "Party Dress for Girls")),
    T("boys' hoodies", "kids_clothing", "Boys › Clothing › Hoodies", 12, 40, True, ("Boys' Hoodie", "Zip Up Hoodie for Boys")),
    T("baby rompers", "kids_clothing", "Baby › Clothing › Rompers", 9, 35, True, ("Baby Romper", "Infant Romper")),
    T("kids' rain boots", "kids_clothing", "Shoes › Boots › Rain", 15, 45, True, ("Kids' Rain Boots", "Toddler Rain Boots")),
    T("kids' pajamas", "kids_clothing", "Boys & Girls › Sleepwear", 12, 38, True, ("Kids' Pajamas", "Pajama Set for Kids")),
    T("women's handbags", "bags_acc", "Women › Handbags & Wallets › Shoulder Bags", 20, 120, True, ("Women's Handbag", "Shoulder Bag for Women")),
    T("men's wallets", "bags_acc", "Men › Wallets", 12, 60, True, ("Men's Wallet", "Slim Bifold Wallet")),
    T("baseball caps", "bags_acc", "Men › Hats & Caps › Baseball Caps", 10, 35, True, ("Baseball Cap", "Adjustable Baseball Hat")),
    T("winter gloves", "bags_acc", "Women › Gloves & Mittens", 10, 40, True, ("Winter Gloves", "Touchscreen Gloves")),
    T("sunglasses", "bags_acc", "Men › Sunglasses & Eyewear › Sunglasses", 12, 90, True, ("Sunglasses", "Polarized Sunglasses")),
    T("women's scarves", "bags_acc", "Women › Scarves & Wraps", 10, 40, True, ("Women's Scarf", "Winter Scarf for Women")),
    T("travel backpack", "bags_acc", "Luggage & Travel Gear › Backpacks", 25, 110, False, ("Travel Backpack", "Carry On Backpack")),
    T("women's necklaces", "jewelry", "Women › Necklaces", 12, 90, True, ("Women's Necklace", "Pendant Necklace")),
    T("stud earrings", "jewelry", "Women › Earrings › Stud", 10, 70, True, ("Stud Earrings", "Earrings Set")),
    T("charm bracelets", "jewelry", "Women › Bracelets › Charm", 12, 80, True, ("Charm Bracelet", "Bead Bracelet")),
    T("men's rings", "jewelry", "Men › Rings", 12, 90, True, ("Men's Ring", "Band Ring for Men")),
    T("men's watches", "jewelry", "Men › Watches › Wrist Watches", 30, 250, True, ("Men's Watch", "Analog Wrist Watch")),
    # ------------------------------------------------------------------ grocery (44)
    T("potato chips", "snacks", "Chips & Crisps › Potato", 3, 28, True, ("Potato Chips", "Kettle Cooked Chips")),
    T("protein bars", "snacks", "Bars › Protein Bars", 12, 40, True, ("Protein Bars", "High Protein Snack Bars")),
    T("trail mix", "snacks", "Nuts, Seeds & Trail Mix › Trail Mix", 6, 30, False, ("Trail Mix", "Trail Mix Snack Packs")),
    T("beef jerky", "snacks", "Jerky & Dried Meats › Beef Jerky", 7, 38, False, ("Beef Jerky", "Smoked Beef Jerky")),
    T("granola bars", "snacks", "Bars › Granola Bars", 4, 22, True, ("Granola Bars", "Chewy Granola Bars")),
    T("popcorn", "snacks", "Popcorn › Ready-to-Eat", 4, 26, False, ("Popcorn", "Ready to Eat Popcorn")),
    T("rice cakes", "snacks", "Puffed Snacks › Rice Cakes", 3, 18, True, ("Rice Cakes", "Thin Rice Cakes")),
    T("crackers", "snacks", "Crackers", 3, 20, True, ("Crackers", "Whole Grain Crackers")),
    T("dried fruit", "snacks", "Dried Fruit & Raisins", 5, 30, False, ("Dried Fruit", "Dried Fruit Snacks")),
    T("mixed nuts", "snacks", "Nuts, Seeds & Trail Mix › Mixed Nuts", 8, 35, True, ("Mixed Nuts", "Roasted Mixed Nuts")),
    T("fruit snacks", "snacks", "Fruit Snacks", 4, 22, True, ("Fruit Snacks", "Gummy Fruit Snacks")),
    T("green tea", "beverages", "Tea › Green", 4, 28, False, ("Green Tea", "Green Tea Bags")),
    T("ground coffee", "beverages", "Coffee › Ground Coffee", 7, 35, False, ("Ground Coffee", "Medium Roast Ground Coffee")),
    T("coffee pods", "beverages", "Coffee › Single-Serve Capsules & Pods", 10, 50, True, ("Coffee Pods", "Single Serve Coffee Pods")),
    T("sparkling water", "beverages", "Water › Sparkling Water", 5, 30, False, ("Sparkling Water", "Flavored Sparkling Water")),
    T("herbal tea", "beverages", "Tea › Herbal", 4, 26, False, ("Herbal Tea", "Herbal Tea Bags")),
    T("hot cocoa mix", "beverages", "Cocoa › Hot Cocoa Mixes", 4, 22, False, ("Hot Cocoa Mix", "Hot Chocolate Mix")),
    T("coconut water", "beverages", "Coconut Water", 8, 35, False, ("Coconut Water", "Pure Coconut Water")),
    T("electrolyte drink mix", "beverages", "Sports Drinks › Powdered Drink Mixes", 10, 40, False, ("Electrolyte Drink Mix", "Hydration Powder Packets")),
    T("matcha powder", "beverages", "Tea › Matcha", 10, 40, False, ("Matcha Powder", "Matcha Green Tea Powder")),
    T("olive oil", "pantry", "Oils, Vinegars & Salad Dressings › Oils › Olive", 8, 40, False, ("Olive Oil", "Extra Virgin Olive Oil")),
    T("pasta sauce", "pantry", "Sauces, Gravies & Marinades › Pasta Sauces", 4, 24, False, ("Pasta Sauce", "Marinara Sauce")),
    T("peanut butter", "pantry", "Jams, Jellies & Sweet Spreads › Peanut Butter", 4, 22, False, ("Peanut Butter", "Creamy Peanut Butter")),
    T("raw honey", "pantry", "Jams, Jellies & Sweet Spreads › Honey", 7, 36, False, ("Raw Honey", "Wildflower Honey")),
    T("maple syrup", "pantry", "Breakfast Foods › Syrups", 8, 36, False, ("Maple Syrup", "Pure Maple Syrup")),
    T("hot sauce", "pantry", "Condiments & Salad Dressings › Hot Sauce", 4, 22, False, ("Hot Sauce", "Chili Hot Sauce")),
    T("taco seasoning", "pantry", "Herbs, Spices & Seasonings › Mixed Spices", 3, 16, False, ("Taco Seasoning", "Taco Seasoning Mix")),
    T("breakfast cereal", "pantry", "Breakfast Foods › Cereals", 4, 24, False, ("Breakfast Cereal", "Crunchy Cereal")),
    T("instant oatmeal", "pantry", "Breakfast Foods › Hot Cereals › Oatmeal", 4, 22, False, ("Instant Oatmeal", "Oatmeal Packets")),
    T("jasmine rice", "pantry", "Dried Beans, Grains & Rice › Rice › Jasmine", 5, 30, False, ("Jasmine Rice", "Long Grain Jasmine Rice")),
    T("canned tuna", "pantry", "Canned, Jarred & Packaged Foods › Seafood › Tuna", 5, 30, False, ("Canned Tuna", "Wild Tuna in Water")),
    T("dark chocolate bar", "candy", "Chocolate › Bars", 3, 30, False, ("Dark Chocolate Bar", "Dark Chocolate Bars")),
    T("gummy candy", "candy", "Gummy Candy", 4, 26, False, ("Gummy Candy", "Gummy Bears")),
    T("hard candy", "candy", "Hard Candy", 4, 24, False, ("Hard Candy", "Assorted Hard Candies")),
    T("chewing gum", "candy", "Gum", 4, 22, False, ("Chewing Gum", "Sugar Free Gum")),
    T("caramel candy", "candy", "Caramel", 5, 28, False, ("Caramel Candy", "Soft Caramels")),
    T("chocolate truffles", "candy", "Chocolate › Truffles", 10, 45, True, ("Chocolate Truffles", "Truffle Gift Box")),
    T("almond flour", "baking", "Flours & Meals › Almond", 7, 30, False, ("Almond Flour", "Blanched Almond Flour")),
    T("pancake mix", "baking", "Baking Mixes › Pancake & Waffle", 4, 20, False, ("Pancake Mix", "Pancake and Waffle Mix")),
    T("vanilla extract", "baking", "Extracts & Flavoring › Vanilla", 6, 32, False, ("Vanilla Extract", "Pure Vanilla Extract")),
    T("sprinkles", "baking", "Decorations › Sprinkles", 4, 20, True, ("Sprinkles", "Rainbow Sprinkles Mix")),
    T("cake mix", "baking", "Baking Mixes › Cakes", 3, 18, False, ("Cake Mix", "Moist Cake Mix")),
    T("baking chocolate chips", "baking", "Baking Chocolates › Chips", 4, 22, True, ("Baking Chocolate Chips", "Chocolate Chips for Baking")),
    T("coconut sugar", "baking", "Sugars & Sweeteners › Coconut Sugar", 5, 24, False, ("Coconut Sugar", "Organic Coconut Sugar")),
    # ------------------------------------------------------------------ garden (50)
    T("throw pillow covers", "bedding", "Decorative Pillows, Inserts & Covers › Throw Pillow Covers", 8, 40, True, ("Throw Pillow Covers", "Decorative Pillow Cases")),
    T("duvet cover set", "bedding", "Duvet Covers & Sets", 25, 120, False, ("Duvet Cover Set", "Comforter Cover Set")),
    T("bed sheets", "bedding", "Sheets & Pillowcases › Sheet & Pillowcase Sets", 20, 110, True, ("Bed Sheet Set", "Bed Sheets")),
    T("weighted blanket", "bedding", "Blankets & Throws › Weighted Blankets", 30, 150, False, ("Weighted Blanket", "Heavy Blanket")),
    T("throw blanket", "bedding", "Blankets & Throws › Throws", 15, 60, False, ("Throw Blanket", "Fleece Throw")),
    T("bed pillows", "bedding", "Bed Pillows & Positioners › Bed Pillows", 20, 110, True, ("Bed Pillows", "Pillows for Sleeping")),
    T("mattress topper", "bedding", "Mattress Pads & Toppers › Toppers", 35, 220, False, ("Mattress Topper", "Foam Mattress Topper")),
    T("accent chair", "furniture", "Living Room Furniture › Chairs", 90, 420, False, ("Accent Chair", "Upholstered Armchair")),
    T("coffee table", "furniture", "Living Room Furniture › Tables › Coffee Tables", 60, 350, False, ("Coffee Table", "Living Room Center Table")),
    T("bookshelf", "furniture", "Home Office Furniture › Bookcases", 45, 260, False, ("Bookshelf", "Open Bookcase")),
    T("tv stand", "furniture", "Living Room Furniture › TV & Media Furniture", 70, 380, False, ("TV Stand", "Media Console")),
    T("bar stools", "furniture", "Game & Recreation Room Furniture › Bar Stools", 70, 320, True, ("Bar Stools", "Counter Height Stools")),
    T("office chair", "furniture", "Home Office Furniture › Desk Chairs", 70, 380, False, ("Office Chair", "Ergonomic Desk Chair")),
    T("sofa", "furniture", "Living Room Furniture › Sofas & Couches", 250, 900, False, ("Sofa", "Loveseat Couch")),
    T("nightstand", "furniture", "Bedroom Furniture › Nightstands", 35, 180, False, ("Nightstand", "Bedside Table")),
    T("shoe rack", "furniture", "Entryway Furniture › Shoe Racks", 18, 90, False, ("Shoe Rack", "Shoe Storage Organizer")),
    T("storage ottoman", "furniture", "Living Room Furniture › Ottomans", 35, 160, False, ("Storage Ottoman", "Ottoman Bench")),
    T("console table", "furniture", "Living Room Furniture › Tables › Sofa & Console Tables", 60, 320, False, ("Console Table", "Entryway Table")),
    T("writing desk", "furniture", "Home Office Furniture › Desks", 60, 340, False, ("Writing Desk", "Computer Desk")),
    T("cookware set", "kitchen", "Cookware › Cookware Sets", 50, 300, False, ("Cookware Set", "Pots and Pans Set")),
    T("chef knife", "kitchen", "Cutlery & Knife Accessories › Chef's Knives", 15, 120, False, ("Chef Knife", "Kitchen Knife")),
    T("cutting board", "kitchen", "Kitchen Utensils & Gadgets › Cutting Boards", 12, 60, False, ("Cutting Board", "Chopping Board")),
    T("coffee mug", "kitchen", "Dining & Entertaining › Cups, Mugs & Saucers", 8, 35, False, ("Coffee Mug", "Ceramic Mug")),
    T("water bottle", "kitchen", "Storage & Organization › Travel & To-Go Drinkware", 10, 45, False, ("Water Bottle", "Insulated Water Bottle")),
    T("food storage containers", "kitchen", "Storage & Organization › Food Storage", 15, 60, True, ("Food Storage Containers", "Meal Prep Containers")),
    T("baking sheet", "kitchen", "Bakeware › Baking Sheets", 10, 45, False, ("Baking Sheet", "Sheet Pan")),
    T("dish drying rack", "kitchen", "Storage & Organization › Dish Racks", 18, 70, False, ("Dish Drying Rack", "Dish Rack")),
    T("cast iron skillet", "kitchen", "Cookware › Skillets", 20, 90, False, ("Cast Iron Skillet", "Cast Iron Pan")),
    T("wall art", "decor", "Wall Art › Posters & Prints", 15, 120, False, ("Wall Art", "Canvas Wall Art")),
    T("table lamp", "decor", "Lighting › Table Lamps", 20, 120, False, ("Table Lamp", "Bedside Lamp")),
    T("blackout curtains", "decor", "Window Treatments › Curtains & Drapes", 18, 80, True, ("Blackout Curtains", "Curtain Panels")),
    T("area rug", "decor", "Rugs, Pads & Protectors › Area Rugs", 30, 300, False, ("Area Rug", "Washable Area Rug")),
    T("picture frames", "decor", "Photo Frames", 10, 60, True, ("Picture Frames", "Photo Frame Set")),
    T("artificial plants", "decor", "Artificial Plants & Flowers", 12, 80, True, ("Artificial Plants", "Fake Potted Plant")),
    T("scented candles", "decor", "Candles & Holders › Jar Candles", 10, 50, True, ("Scented Candles", "Jar Candle")),
    T("wall clock", "decor", "Clocks › Wall Clocks", 15, 80, False, ("Wall Clock", "Silent Wall Clock")),
    T("wall mirror", "decor", "Mirrors › Wall-Mounted Mirrors", 30, 220, False, ("Wall Mirror", "Decorative Mirror")),
    T("bath towels", "bath", "Towels › Bath Towels", 18, 80, True, ("Bath Towels", "Bath Towel Set")),
    T("shower curtain", "bath", "Shower Curtains, Hooks & Liners", 12, 50, False, ("Shower Curtain", "Fabric Shower Curtain")),
    T("bath mat", "bath", "Bath Rugs", 10, 45, False, ("Bath Mat", "Bathroom Rug")),
    T("shower caddy", "bath", "Bathroom Accessories › Shower Caddies", 15, 55, False, ("Shower Caddy", "Shower Shelf")),
    T("garden hose", "patio", "Gardening & Lawn Care › Watering Equipment › Hoses", 20, 90, False, ("Garden Hose", "Expandable Garden Hose")),
    T("patio umbrella", "patio", "Patio Furniture & Accessories › Umbrellas", 40, 250, False, ("Patio Umbrella", "Market Umbrella")),
    T("solar pathway lights", "patio", "Outdoor Décor › Outdoor Lighting", 15, 70, True, ("Solar Pathway Lights", "Solar Garden Lights")),
    T("planter pots", "patio", "Gardening & Lawn Care › Pots, Planters & Container Accessories", 12, 70, True, ("Planter Pots", "Flower Pots")),
    T("bird feeder", "patio", "Wild Bird & Wildlife Care › Bird Feeders", 12, 60, False, ("Bird Feeder", "Hanging Bird Feeder")),
    T("outdoor cushions", "patio", "Patio Furniture & Accessories › Cushions", 20, 120, True, ("Outdoor Cushions", "Patio Seat Cushions")),
    T("garden kneeler", "patio", "Gardening & Lawn Care › Hand Tools", 18, 60, False, ("Garden Kneeler", "Garden Kneeler and Seat")),
    T("storage bins", "storage", "Storage Bins & Baskets", 12, 60, True, ("Storage Bins", "Fabric Storage Cubes")),
    T("closet organizer", "storage", "Clothing & Closet Storage › Closet Systems", 20, 120, False, ("Closet Organizer", "Hanging Closet Shelves")),
    T("laundry basket", "storage", "Laundry Storage & Organization › Laundry Baskets", 12, 50, False, ("Laundry Basket", "Collapsible Laundry Hamper")),
    T("drawer organizer", "storage", "Drawer Organizers", 10, 40, False, ("Drawer Organizer", "Drawer Divider Set")),
    T("under bed storage", "storage", "Under-Bed Storage", 18, 60, False, ("Under Bed Storage", "Under Bed Storage Bags")),
)
del T

# --------------------------------------------------------------------------------------------
# Per-type tweaks of the group tables: attributes a type must not get ("exclude"), attributes only
# it gets ("extra") and its own option schema ("options"; same form as Group.options).
# --------------------------------------------------------------------------------------------
_TOPS_ONLY = ("long sleeve", "short sleeve", "button closure")
_BOTTOMS_ONLY = ("high waist", "tummy control", "elastic waistband", "drawstring closure", "pull on")
_WOMEN_TOP = {"exclude": _BOTTOMS_ONLY}
_WOMEN_BOTTOM = {"exclude": _TOPS_ONLY}
_MEN_TOP = {"exclude": ("elastic waistband", "drawstring closure", "zipper pockets")}
_MEN_BOTTOM = {"exclude": ("long sleeve", "short sleeve")}
_SHEET_LIKE = {"options": (("color_home", 0.8, 2, 6), ("size_bed", 0.8, 2, 5))}
_ORAL_PASTE = {
    "exclude": ("rechargeable battery", "long battery", "travel case", "soft bristles", "easy grip"),
    "options": (("flavor_oral", 0.7, 2, 4), ("count", 0.4, 2, 4)),
}
_ORAL_DEVICE = {
    "exclude": ("fluoride free", "mint flavor", "enamel safe", "fresh breath"),
    "options": (("color_device", 0.75, 2, 5), ("count", 0.25, 2, 3)),
}
_SWEET_SNACK = {"options": (("flavor_sweet", 0.7, 2, 6), ("size_weight_food", 0.5, 2, 4))}
_SAVORY_SNACK = {"options": (("flavor_savory", 0.7, 2, 6), ("size_weight_food", 0.5, 2, 4))}
_PLAIN_FOOD = {"options": (("size_weight_food", 0.75, 2, 4), ("pack", 0.2, 2, 3))}
_SEATING = ("lumbar support", "adjustable height", "padded seat", "soft cushion")
_CASEGOODS = ("open shelves", "anti tip", "storage space", "engineered wood")
TYPE_TWEAKS: dict[str, dict[str, tuple]] = {
    # fashion
    "women's leggings": _WOMEN_BOTTOM, "women's yoga pants": _WOMEN_BOTTOM,
    "women's jeans": _WOMEN_BOTTOM, "women's shorts": _WOMEN_BOTTOM,
    "women's sweaters": _WOMEN_TOP, "women's blouses": _WOMEN_TOP, "women's cardigans": _WOMEN_TOP,
    "women's rain jackets": _WOMEN_TOP, "women's t-shirts": _WOMEN_TOP,
    "women's swimsuits": {"exclude": _TOPS_ONLY + ("drawstring closure", "elastic waistband")},
    "women's maxi dresses": {"exclude": ("high waist", "tummy control", "drawstring closure", "pull on")},
    "men's t-shirts": {"exclude": ("elastic waistband", "drawstring closure", "zipper pockets", "button closure")},
    "men's polo shirts": _MEN_TOP, "men's dress shirts": _MEN_TOP,
    "men's hoodies": {"exclude": ("elastic waistband", "button closure", "short sleeve")},
    "men's rain jackets": {"exclude": ("elastic waistband", "short sleeve")},
    "men's jeans": _MEN_BOTTOM, "men's cargo shorts": _MEN_BOTTOM, "men's joggers": _MEN_BOTTOM,
    "men's swim trunks": _MEN_BOTTOM, "men's pajama pants": _MEN_BOTTOM,
    "men's boxer briefs": {"exclude": ("long sleeve", "short sleeve", "button closure", "zipper pockets",
                                       "drawstring closure", "wrinkle resistant")},
    "kids' rain boots": {
        "exclude": ("long sleeve", "short sleeve", "snap closure", "elastic waistband", "cotton blend",
                    "soft fabric", "breathable fabric", "tag free", "machine washable"),
        "extra": ("waterproof rubber", "pull handles"),
        "options": (("color_apparel", 0.85, 2, 5), ("size_kids", 0.8, 3, 6)),
    },
    "girls' dresses": {"exclude": ("non slip",)},
    "baby rompers": {"exclude": ("non slip",), "options": (("color_apparel", 0.85, 2, 5), ("size_baby", 0.85, 3, 5))},
    "boys' hoodies": {"exclude": ("non slip", "snap closure")},
    "kids' pajamas": {"exclude": ("non slip",)},
    "sunglasses": {"extra": ("polarized lenses", "uv protection", "scratch resistant")},
    "winter gloves": {"extra": ("touch screen", "one size", "thermal lining")},
    "baseball caps": {"extra": ("one size", "uv protection", "adjustable strap")},
    "women's scarves": {"extra": ("one size", "thermal lining")},
    "men's wallets": {"extra": ("rfid blocking", "faux leather", "multiple pockets")},
    "women's handbags": {"extra": ("rfid blocking", "faux leather", "adjustable strap",
                                   "multiple pockets", "zipper closure", "large capacity")},
    "travel backpack": {"extra": ("rfid blocking", "laptop compartment", "adjustable strap",
                                  "multiple pockets", "zipper closure", "large capacity")},
    "men's rings": {"options": (("size_ring", 0.9, 3, 6), ("color_metal", 0.5, 2, 4))},
    "men's watches": {"exclude": ("adjustable chain", "lobster clasp", "birthstone charm", "dainty design")},
    # beauty
    "toothpaste": _ORAL_PASTE, "mouthwash": _ORAL_PASTE, "teeth whitening strips": _ORAL_PASTE,
    "electric toothbrush": _ORAL_DEVICE, "water flosser": _ORAL_DEVICE,
    "lipstick": {"options": (("color_lip", 0.8, 3, 8), ("count", 0.15, 2, 3))},
    "mascara": {"options": (("color_eye", 0.6, 2, 4), ("count", 0.3, 2, 3))},
    "eyeliner": {"options": (("color_eye", 0.7, 2, 5), ("count", 0.3, 2, 3))},
    "eyeshadow palette": {"options": (("count", 0.3, 2, 3),)},
    "makeup brushes": {"options": (("color_metal", 0.5, 2, 4), ("count", 0.3, 2, 3))},
    "foundation": {"options": (("color_shade", 0.85, 3, 8),)},
    "concealer": {"options": (("color_shade", 0.85, 3, 8),)},
    "setting powder": {"options": (("color_shade", 0.7, 3, 6),)},
    # electronics
    "hdmi cable": {"options": (("size_cable", 0.9, 2, 5), ("pack", 0.3, 2, 3))},
    "tv wall mount": {"options": (("size_tv", 0.7, 2, 4),)},
    "projector screen": {"options": (("size_tv", 0.7, 2, 4),)},
    "soundbar": {"options": (("color_device", 0.5, 2, 3),)},
    "mini projector": {"options": (("color_device", 0.5, 2, 3),)},
    "tv antenna": {"options": (("pack", 0.4, 2, 3),)},
    "universal remote": {"options": (("color_device", 0.4, 2, 3), ("pack", 0.3, 2, 3))},
    "phone case": {"options": (("color_device", 0.8, 2, 6), ("size_screen", 0.6, 2, 4),
                               ("style_phone_case", 0.3, 2, 3))},
    "screen protector": {"options": (("size_screen", 0.8, 2, 4), ("pack", 0.3, 2, 3))},
    "charging cable": {"options": (("size_cable", 0.7, 2, 4), ("color_device", 0.5, 2, 4))},
    "wall charger": {"options": (("color_device", 0.5, 2, 3), ("pack", 0.3, 2, 3))},
    "car phone mount": {"options": (("color_device", 0.5, 2, 3),)},
    "wireless charger": {"options": (("color_device", 0.6, 2, 4),)},
    "phone tripod": {"options": (("color_device", 0.5, 2, 3),)},
    "wireless mouse": {"options": (("color_device", 0.7, 2, 5), ("connectivity", 0.3, 2, 3))},
    "mechanical keyboard": {"options": (("color_device", 0.5, 2, 4), ("style_keyboard", 0.5, 2, 3))},
    "laptop stand": {"options": (("color_device", 0.6, 2, 4),)},
    "laptop sleeve": {"options": (("color_device", 0.7, 2, 5), ("size_laptop", 0.8, 2, 5))},
    "usb hub": {"options": (("color_device", 0.4, 2, 3),)},
    "webcam": {"options": (("connectivity", 0.3, 2, 3),)},
    "mouse pad": {"options": (("color_device", 0.7, 2, 5), ("size_storage", 0.4, 2, 3))},
    "monitor arm": {"options": (("color_device", 0.5, 2, 3),)},
    "memory card": {"options": (("capacity_memory", 0.9, 2, 4), ("pack", 0.3, 2, 3))},
    "camera tripod": {"options": (("color_device", 0.4, 2, 3), ("size_tool", 0.3, 2, 3))},
    "ring light": {"options": (("size_tool", 0.5, 2, 3),)},
    "power bank": {"options": (("capacity_battery", 0.8, 2, 4), ("color_device", 0.5, 2, 4))},
    "solar charger": {"options": (("capacity_battery", 0.6, 2, 3),)},
    "extension cord": {"options": (("size_cable", 0.8, 2, 5), ("color_device", 0.3, 2, 3))},
    "surge protector": {"options": (("size_cable", 0.6, 2, 4), ("pack", 0.3, 2, 3))},
    "rechargeable batteries": {"options": (("count", 0.8, 2, 4),)},
    # grocery
    "protein bars": _SWEET_SNACK, "granola bars": _SWEET_SNACK, "fruit snacks": _SWEET_SNACK,
    "dried fruit": _SWEET_SNACK, "trail mix": _SWEET_SNACK,
    "potato chips": _SAVORY_SNACK, "crackers": _SAVORY_SNACK, "popcorn": _SAVORY_SNACK,
    "beef jerky": _SAVORY_SNACK, "mixed nuts": _SAVORY_SNACK, "rice cakes": _SAVORY_SNACK,
    "almond flour": _PLAIN_FOOD, "coconut sugar": _PLAIN_FOOD, "vanilla extract": _PLAIN_FOOD,
    "jasmine rice": _PLAIN_FOOD, "canned tuna": _PLAIN_FOOD, "olive oil": _PLAIN_FOOD,
    "raw honey": _PLAIN_FOOD, "maple syrup": _PLAIN_FOOD,
    # garden
    "throw pillow covers": {"options": (("color_home", 0.85, 2, 6), ("size_pillow", 0.7, 2, 4),
                                        ("pattern", 0.3, 2, 3))},
    "duvet cover set": _SHEET_LIKE, "bed sheets": _SHEET_LIKE, "mattress topper": _SHEET_LIKE,
    "weighted blanket": _SHEET_LIKE,
    "throw blanket": {"options": (("color_home", 0.9, 2, 6), ("pattern", 0.3, 2, 4))},
    "bed pillows": {"options": (("size_bed", 0.6, 2, 3), ("pack", 0.4, 2, 3))},
    "accent chair": {"exclude": _CASEGOODS}, "office chair": {"exclude": _CASEGOODS},
    "bar stools": {"exclude": _CASEGOODS}, "sofa": {"exclude": _CASEGOODS + ("adjustable height",)},
    "bookshelf": {"exclude": _SEATING}, "tv stand": {"exclude": _SEATING},
    "nightstand": {"exclude": _SEATING}, "console table": {"exclude": _SEATING},
    "shoe rack": {"exclude": _SEATING}, "coffee table": {"exclude": _SEATING},
    "writing desk": {"exclude": ("lumbar support", "padded seat", "soft cushion")},
    "storage ottoman": {"exclude": ("lumbar support", "adjustable height", "anti tip", "open shelves")},
    "coffee mug": {"options": (("color_kitchen", 0.7, 2, 5), ("size_drinkware", 0.5, 2, 3),
                               ("set_size", 0.3, 2, 3))},
    "water bottle": {"options": (("color_kitchen", 0.8, 2, 6), ("size_drinkware", 0.7, 2, 4))},
    "cookware set": {"options": (("color_kitchen", 0.6, 2, 4), ("size_cookware", 0.5, 2, 3))},
    "cast iron skillet": {"options": (("size_cookware", 0.8, 2, 4),)},
    "food storage containers": {"options": (("set_size", 0.7, 2, 4), ("color_kitchen", 0.3, 2, 3))},
    "wall art": {"options": (("size_wall", 0.8, 2, 5), ("color_home", 0.4, 2, 4))},
    "picture frames": {"options": (("color_home", 0.6, 2, 4), ("size_wall", 0.7, 2, 5))},
    "wall mirror": {"options": (("color_metal", 0.6, 2, 4), ("shape", 0.4, 2, 3))},
    "blackout curtains": {"options": (("color_home", 0.9, 2, 6), ("size_curtain", 0.8, 2, 5))},
    "area rug": {"options": (("color_home", 0.8, 2, 5), ("size_rug", 0.85, 2, 5))},
    "table lamp": {"options": (("color_home", 0.6, 2, 4), ("style_lamp", 0.4, 2, 3))},
    "scented candles": {"options": (("scent", 0.85, 2, 5), ("count", 0.3, 2, 3))},
    "artificial plants": {"options": (("color_garden", 0.4, 2, 3), ("pack", 0.3, 2, 3))},
    "wall clock": {"options": (("color_home", 0.7, 2, 5),)},
    "garden hose": {"extra": ("kink free", "brass fittings", "flexible design"),
                    "options": (("size_hose", 0.9, 2, 4), ("color_garden", 0.5, 2, 4))},
    "patio umbrella": {"extra": ("uv protection", "tilt function", "waterproof fabric", "crank open")},
    "solar pathway lights": {"extra": ("solar powered", "auto on", "warm white")},
    "planter pots": {"extra": ("drainage hole", "indoor outdoor", "saucer included")},
    "bird feeder": {"extra": ("bird friendly", "squirrel proof", "hanging hook")},
    "outdoor cushions": {"extra": ("uv protection", "waterproof fabric", "non slip ties")},
    "garden kneeler": {"extra": ("foldable design", "thick foam", "tool pouch")},
}

# Attribute pairs that contradict each other; a product never gets both.
CONFLICTING_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("long sleeve", "short sleeve"), ("slim fit", "relaxed fit"), ("slim fit", "regular fit"),
    ("relaxed fit", "regular fit"), ("slim fit", "classic fit"), ("classic fit", "relaxed fit"),
    ("classic fit", "regular fit"), ("matte finish", "dewy finish"), ("for dry skin", "for oily skin"),
    ("dry skin", "oily skin"), ("hand wash", "machine washable"), ("full coverage", "natural look"),
    ("sugar free", "low sugar"), ("zero sugar", "cane sugar"), ("sterling silver", "gold plated"),
    ("sterling silver", "stainless steel"), ("solid wood", "engineered wood"),
    ("lace up", "easy slip"), ("open toe", "steel toe"),
)

# Attributes ending in one of these words read as noun phrases ("with arch support"); the
# instruction writers then say "with ..." instead of using them as adjectives after the noun.
NOUN_HEADS: tuple[str, ...] = (
    "protection", "pockets", "lenses", "holder", "seat", "closure", "support", "sole", "insole",
    "strap", "toe", "upper", "plates", "cord", "case", "lining", "handles", "frame", "cushion",
    "shelves", "lids", "bristles", "microphone", "sound", "bass", "control", "technology", "pouch",
    "shot", "alerts", "screen", "counter", "tracking", "rate", "mount", "chain", "clasp", "charm",
    "message", "box", "bag", "ingredients", "oils", "blades", "flavor", "fill", "pocket", "zipper",
    "audio", "detection", "storage", "light", "indicator", "outlets", "plug", "hole", "function",
    "playtime", "pairing", "latency", "connection", "click", "band", "battery", "grip", "handle",
    "size", "blend", "waistband", "sleeve", "fabric", "space", "lid", "cups", "finish", "look",
    "formula", "scent", "growth", "shine", "effect", "nails", "breath", "care", "hygiene", "teeth",
    "voltage", "wrapping", "milk", "soap", "set", "wear", "fit", "temperature", "design", "acid",
    "butter", "vera", "oil", "tree", "c", "lines", "scalp", "hair", "skin", "eyes", "chocolate",
    "calorie", "carb", "fiber", "grain", "sugar", "flavors", "colors", "origin", "bean", "brew",
    "bags", "sodium", "batch", "candy", "extract", "wood", "century", "leather", "assemble",
    "glass", "edges", "profile", "alloy", "backlit", "mode", "management", "stabilization",
    "shutter", "release", "vision", "angle", "hub", "strip", "label", "holders", "view", "purpose",
    "fur", "width", "mesh", "metal", "zirconia", "steel", "lenses", "gold", "silver",
)
NOUN_HEADS_EXCLUDE: tuple[str, ...] = ("easy assemble", "non slip", "easy install")

# --------------------------------------------------------------------------------------------
# Brands: hand-made names plus syllables for more.
# --------------------------------------------------------------------------------------------
BRANDS: tuple[str, ...] = (
    "Lumora", "Brightwell", "Kestrel & Co", "Northpine", "Velloria", "Oakmere", "Tidewell",
    "Quillon", "Marrowby", "Solvane", "Fernhollow", "Greyling", "Auralis", "Brisko", "Copperfield Lane",
    "Dunmore", "Everbloom", "Foxglen", "Halcyra", "Ironvale", "Juniper Row", "Kovalo", "Larkspur",
    "Meadowcraft", "Nivelle", "Orchard & Ash", "Pinecrest", "Quorra", "Rivanna", "Saltmarsh",
    "Tessaro", "Umbergate", "Vireo", "Willowmere", "Xandra", "Yarrowby", "Zephyrine", "Ambergrove",
    "Bellhaven", "Calloway Home", "Driftnook", "Emberlane", "Frostwick", "Glimmora", "Hartwell",
    "Islay Goods", "Jetstone", "Kindred Oak", "Lindqvist", "Mosswood", "Novabright", "Oriel",
    "Pavona", "Ridgeline", "Sundara", "Thistledown", "Upland Supply", "Valewood", "Wrenfield",
    "Zestora", "Arcwise", "Bytelane", "Circuitry", "Decibelle", "Echovale", "Fluxora", "Gridhaus",
    "Hexel", "Ionic Bay", "Joltwell", "Kiloway", "Lumenix", "Modulo", "Nodecraft", "Ohmara",
    "Pixelry", "Quantor", "Resonix", "Synthra", "Tekvale", "Voltaro", "Wattson & Pine",
)
BRAND_SYLLABLES_A: tuple[str, ...] = (
    "Ar", "Bel", "Cor", "Del", "El", "Fen", "Gal", "Hal", "Ist", "Jor", "Kal", "Lor", "Mer",
    "Nor", "Or", "Pel", "Quin", "Ros", "Sil", "Tor", "Ul", "Ven", "Wil", "Yor", "Zan",
)
BRAND_SYLLABLES_B: tuple[str, ...] = (
    "aro", "eva", "ilo", "ora", "une", "ista", "anto", "elle", "ivo", "orra", "ex", "ion", "ora",
    "ely", "ant", "iko", "amo", "eth", "ova", "ynn",
)
BRAND_SUFFIXES: tuple[str, ...] = ("", "", "", " Home", " Goods", " Co", " Labs", " Studio", " Supply", " Living")

# --------------------------------------------------------------------------------------------
# Sentence templates.
# Placeholders: {brand} {noun} {noun_lc} {material} {material2} {use} {use2} {user} {attr} {attr2}
# {adj}
# --------------------------------------------------------------------------------------------
# Bullets that feature one attribute ({attr}); they must read well for any attribute phrase.
ATTR_BULLET_TEMPLATES: tuple[str, ...] = (
    "{ATTR_UP} - Made with {material} for {use}, this {noun_lc} keeps up with your routine.",
    "{ATTR_UP}: this {adj_lc} {noun_lc} stays reliable day after day.",
    "Key features: {attr}, {attr2}. Built from {material} and checked by hand before it ships.",
    "Why customers choose it: {attr} and {attr2}.",
    "{ATTR} | {ATTR2} | {MATERIAL}",
    "Thoughtful details: {attr}, plus a {material} finish that feels premium.",
    "{ATTR} - tested for {use} so it works when you need it.",
    "Designed around one idea: {attr}. Great for {user}.",
)
PLAIN_BULLET_TEMPLATES: tuple[str, ...] = (
    "Made for {use}: this {adj_lc} {noun_lc} works as hard as you do.",
    "Quality materials: {material} and {material2}, inspected before shipping.",
    "What you get: one {noun_lc} from {brand}, packed in a recyclable box.",
    "Versatile use: perfect for {use} and {use2}.",
    "Worry free purchase: {brand} backs this {noun_lc} with friendly customer support.",
    "Great gift idea: a practical present for {user} on birthdays and holidays.",
    "Easy to love: designed for {user} who want function without giving up style.",
)
DESCRIPTION_SENTENCES: tuple[str, ...] = (
    "The {brand} {noun_lc} was designed for {use}.",
    "Every {noun_lc} is made with {material} and finished with care.",
    "Customers pick it for one reason above all: {attr}.",
    "Pair it with the rest of the {brand} collection for a consistent look.",
    "We tested it for weeks ({use}) before releasing it.",
    "Highlights include {attr} and {attr2}.",
    "Thanks to {material}, it holds up well over time.",
    "A simple, dependable choice for {use2}.",
    "Store in a cool, dry place and follow the care instructions on the label.",
    "Our team inspects each unit before it ships.",
    "Colors may look slightly different depending on your screen.",
    "Please check the size details before ordering.",
    "Questions? Our support team answers within one business day.",
    "Designed with {user} in mind, it balances comfort, function and price.",
    "The {adj_lc} design fits right in with {use}.",
    "Made in small batches by the {brand} team.",
)
# Sentences naming the product type as shoppers search for it ({query} is lowercase).
QUERY_SENTENCES: tuple[str, ...] = (
    "Part of the {brand} line of {query}.",
    "One of our best-selling {query}.",
    "Shoppers looking for {query} often start here.",
    "Browse all {brand} {query} for more choices.",
    "Category: {query}.",
)
# Sentences for products that do NOT have an attribute the family's other members have; {X} is the
# attribute in a hyphenated form (never the plain phrase), so the product clearly lacks it.
LACKING_TEMPLATES: tuple[str, ...] = (
    "Please note: this item is not {X}.",
    "Not {X}; the {X} version is sold separately.",
    "Heads up: unlike our {X} edition, this one is the standard model.",
    "This listing does not include the {X} upgrade.",
    "Looking for {X}? That is a different listing; this one is not.",
    "Note that this model is not {X}.",
)
REVIEW_TITLES: dict[int, tuple[str, ...]] = {
    5: ("Love it", "Exactly what I needed", "Five stars", "Great quality", "Would buy again",
        "Better than expected", "Perfect", "Highly recommend"),
    4: ("Very good", "Solid choice", "Pretty happy", "Good value", "Nice, with one small issue",
        "Does the job well"),
    3: ("It's okay", "Average", "Mixed feelings", "Decent for the price", "Not bad, not great"),
    2: ("Disappointed", "Not as described", "Could be better", "Meh", "Had some problems"),
    1: ("Would not buy again", "Returned it", "Poor quality", "Broke quickly", "Not worth it"),
}
REVIEW_BODIES: dict[int, tuple[str, ...]] = {
    5: ("I bought this {noun_lc} for {use} and it has been fantastic.",
        "Really {attr} as promised. The {material} feels great.",
        "Arrived quickly and works perfectly. My whole family uses it.",
        "Second one I have ordered. {brand} nailed it."),
    4: ("Good {noun_lc} overall. Shipping was a little slow but the product is nice.",
        "Works well for {use}. Wish it came in more options.",
        "Nice quality for the money; {attr} as described."),
    3: ("It's fine. Does what it says but nothing special.",
        "The {noun_lc} is okay, a bit smaller than I expected.",
        "Average quality. It works for {use} but I had hoped for more."),
    2: ("The {material} started wearing after a few weeks.",
        "Not really {attr} in my experience. Disappointed.",
        "Looked different from the photos."),
    1: ("Stopped working after a week and I had to return it.",
        "Poor quality {noun_lc}. Would not recommend.",
        "Arrived damaged and customer service was slow."),
}

# --------------------------------------------------------------------------------------------
# Instructions.
# --------------------------------------------------------------------------------------------
SYNTH_LEADS: tuple[str, ...] = (
    "Find me", "I am looking for", "I need", "Show me", "Looking for", "Search for", "I want",
    "Can you find", "Help me find", "Get me",
)
HUMAN_LEADS: tuple[str, ...] = (
    "i'm looking for", "i need", "can you find me", "show me", "i want to buy", "i am looking for",
    "please find", "help me find", "i'd like to get", "i want", "find me", "i am shopping for",
    "get me", "i'm searching for",
)
HUMAN_TAILS: tuple[str, ...] = ("", "", "", "", " please", ", thanks", ". thank you")
# How an option value is said in a human instruction, by lowercased option name.
HUMAN_OPTION_PHRASES: dict[str, tuple[str, ...]] = {
    "color": ("in {v}", "in {v} color", "in the color {v}", "that comes in {v}"),
    "size": ("in size {v}", "size {v}", "in the {v} size"),
    "flavor name": ("in {v} flavor", "with the {v} flavor", "{v} flavored"),
    "scent": ("with a {v} scent", "in the {v} scent", "{v} scented"),
    "count": ("{v}", "in the {v} option"),
    "item package quantity": ("pack of {v}", "in a package of {v}"),
    "number of items": ("set of {v}", "{v} items"),
    "style": ("in the {v} style", "{v} style"),
    "pattern name": ("with the {v} pattern", "in {v} pattern"),
    "material": ("in {v}", "made of {v}"),
    "material type": ("made of {v}", "in {v}"),
    "fit type": ("in {v} fit", "{v} fit"),
    "capacity": ("with {v}", "{v} capacity"),
    "wattage": ("{v}", "with {v} power"),
    "item shape": ("{v} shaped", "in a {v} shape"),
}
BUDGET_PHRASES: tuple[str, ...] = (
    " under {cap} dollars", ", under {cap} dollars", " that costs less than {cap} dollars",
    ", my budget is {cap} dollars", " for less than {cap} dollars",
)
# fmt: on
